#!/usr/bin/env bash
# session 37 call 2: run2.sh again after run2's illegal-instruction error in
# the three-stage fp8 ring (knob ring=2) with the hint; that ring now copies
# unhinted, the two-stage ring (the default) keeps the hint. Every GPU unit
# test, fixtures on cuda, the SASS gate; fp8 decode at 512 and 4096, on
# against off interleaved; the GEMV kernels alone (hint on).
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
dv_gate
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward test_gpu_gdn; do
  timeout 200 "$B/$t" >"$L/$t.log" 2>&1; echo "$t rc=$? $(tail -1 "$L/$t.log")"
done
grep -m3 "CHECK failed" $L/test_gpu_gemv_multi.log | cut -c1-250
DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py >"$L/fixtures.log" 2>&1
echo "fixtures rc=$? $(tail -1 "$L/fixtures.log")"
dv_models_wait
echo "$(dv_t)"
for round in 1 2 3; do
  echo -n "on  "; dv_decode fp8-block
  echo -n "off "; DOTLM_DISABLE=cuda.gemv_l2_evict_first dv_decode fp8-block
done
for round in 1 2; do
  echo -n "on  "; dv_decode fp8-block --prompt-len 4096 --gen 32
  echo -n "off "; DOTLM_DISABLE=cuda.gemv_l2_evict_first dv_decode fp8-block --prompt-len 4096 --gen 32
done
DOTLM_STATS=1 timeout 60 $B/dotlm bench --model /dev/shm/m_fp8-block --backend cuda --prompt-len 64 --gen 8 --stats 2>&1 | grep -E "gemv_l2_evict_first|gemv_ring " | head -3
echo "$(dv_t)"
DOTLM_GEMV_VARIANTS="default" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(bf16|fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-130
