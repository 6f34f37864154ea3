#!/usr/bin/env bash
# session 34 call 2: call 1 showed deeper rings slower for the small
# launches but faster for the long-K GEMV alone (5120x17408 early chain
# 67 -> 79% at 5 stages). So: knob lring (the ring for M = 1 launches with
# K >= 8192: the down projection). The GEMV variant test (new deep-ring
# cases), then fp8 decode at 512 interleaved: lring=0 (default), 2, 3, 4;
# at 4096: 0, 3, 4; the GEMV kernel alone with lring=3 / 4.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
timeout 200 $B/test_gpu_gemv_multi > $L/test_gpu_gemv_multi.log 2>&1; echo "test_gpu_gemv_multi rc=$? $(tail -1 $L/test_gpu_gemv_multi.log)"
grep -i 'deep' $L/test_gpu_gemv_multi.log | head -5
dv_models_wait
echo "$(dv_t)"
for round in 1 2 3; do
  for s in 0 2 3 4; do DOTLM_GEMV=default,lring=$s dv_decode fp8-block; done
done
for round in 1 2; do
  for s in 0 3 4; do DOTLM_GEMV=default,lring=$s dv_decode fp8-block --prompt-len 4096 --gen 32; done
done
echo "$(dv_t)"
DOTLM_GEMV_VARIANTS="default;default,lring=3;default,lring=4" timeout 200 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_finish
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-130
