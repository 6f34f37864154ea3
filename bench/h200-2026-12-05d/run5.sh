#!/usr/bin/env bash
# session 38 call 5: the committed build (knob xpf opt-in, test_gpu_forward
# opts in). Every GPU test, fixtures on cuda, the SASS gate; the M = 1
# GEMVs alone with xpf=1 / 0; fp8 decode at 512 with DOTLM_GEMV=xpf=1
# against the default, interleaved (for an H200: whether decode answers
# there as it did on the H100).
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
dv_gate
dv_tests
grep -m3 "CHECK failed" $L/test_gpu_gemv_multi.log | cut -c1-250
DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,xpf=1" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_models_wait
echo "$(dv_t)"
for round in 1 2 3; do
  echo -n "default "; dv_decode fp8-block
  echo -n "xpf=1   "; DOTLM_GEMV=xpf=1 dv_decode fp8-block
done
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(bf16|fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-140
