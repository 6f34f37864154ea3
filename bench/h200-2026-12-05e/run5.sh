#!/usr/bin/env bash
# session 39 call 5: the build with xpf=2 the default and i8xp=2 (the W8A8
# next-group code loads for weights with k > 4096 only). Every GPU test, the
# fixtures, the SASS gate; the M = 1 GEMVs per knob; int8 decode with
# i8xp=0 / 1 / 2 interleaved; fp8 decode by default (xpf=2) and xpf=0.
. bench/lib/device_prelude.sh
dv_init
dv_models int8 fp8-block
dv_gate
dv_tests
DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,xpf=0;default,i8xp=1;default,i8xp=2" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_var.log 2>&1; echo "gpu_bench variants rc=$?"
dv_models_wait
echo "$(dv_t)"
for round in 1 2; do
  for x in 0 1 2; do echo -n "i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8; done
done
for x in 0 2; do echo -n "i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8 --prompt-len 4096 --gen 32; done
for round in 1 2; do
  echo -n "default "; dv_decode fp8-block
  echo -n "xpf=0 "; DOTLM_GEMV=xpf=0 dv_decode fp8-block
done
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D" $L/gpu_bench_var.log
grep -E "^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench_var.log | cut -c1-150
