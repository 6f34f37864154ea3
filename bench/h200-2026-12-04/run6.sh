#!/usr/bin/env bash
# session 31 call 6: the engine with the GEMV weight streams hinted L2
# evict_first (cuda.gemv_l2_evict_first, on): every GPU test, fixtures on
# cuda, the SASS gate, then decode at 512 for fp8 block / int8 / bf16 with
# the switch on and off, interleaved (and fp8 after 4096)
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8 bf16
dv_gate
dv_tests
echo "$(dv_t)"
dv_models_wait
echo "$(dv_t)"
for f in fp8-block int8 bf16; do
  for rep in 1 2; do
    dv_decode $f --prompt-len 512 --gen 64 --stats | sed 's/^/on  /'
    DOTLM_DISABLE=cuda.gemv_l2_evict_first dv_decode $f --prompt-len 512 --gen 64 --stats | sed 's/^/off /'
  done
done
dv_decode fp8-block --prompt-len 4096 --gen 64 | sed 's/^/on  /'
DOTLM_DISABLE=cuda.gemv_l2_evict_first dv_decode fp8-block --prompt-len 4096 --gen 64 | sed 's/^/off /'
echo "$(dv_t)"
grep -H "gemv_l2_evict_first" $L/dec_*.log | head -4
# the kernel table only if the call has time left (a command may run 600 s)
if [ $(($(date +%s) - DV_T0)) -lt 430 ]; then
  timeout 90 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
else
  echo "gpu_bench skipped (time)"; : > $L/gpu_bench.log
fi
dv_finish
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(fp8 block|int8 W8A8|bf16) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-110
