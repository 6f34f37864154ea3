#!/usr/bin/env bash
# session 30 call 1: main as it stands (engine code of stop 28, b345544),
# the whole judged table in one call: every GPU test, fixtures on cuda, the
# SASS gate, the GEMV / GEMM / peak table with the copy bandwidth, then
# decode and prompt at 512 (twice) and 4096 for fp8 block / int8 / bf16,
# and one opt-in data point (fp8 through the fp16 dot variant)
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8 bf16
dv_gate
dv_tests
timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_models_wait
echo "$(dv_t)"
for f in fp8-block int8 bf16; do
  for P in 512 512 4096; do
    log=$L/dec_$f.$P.$(date +%s%N).log
    timeout 120 $B/dotlm bench --model /dev/shm/m_$f --backend cuda --prompt-len $P --gen 64 > $log 2>&1
    echo "$f P=$P: $(grep -hE '^prompt' $log | sed 's/.*= //') | $(grep -hE '^decode' $log | sed 's/.*= //')"
  done
done
DOTLM_GPU_FP8_DOT2=1 dv_decode fp8-block --prompt-len 512 --gen 64 | sed 's/^/dot2 /'
dv_finish
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(fp8 block|int8 W8A8|bf16) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-110
