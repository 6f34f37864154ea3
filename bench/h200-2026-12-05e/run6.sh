#!/usr/bin/env bash
# session 39 call 6 (run5.sh cut to the device time left): the build with
# xpf=2 the default and i8xp=2. Every GPU test and the fixtures; the M = 1
# GEMVs per knob; one round of int8 decode with i8xp=0 / 2 and of fp8
# decode by default (xpf=2) and with xpf=0.
. bench/lib/device_prelude.sh
dv_init
dv_models int8 fp8-block
dv_tests
DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,xpf=0;default,i8xp=1;default,i8xp=2" timeout 60 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_var.log 2>&1; echo "gpu_bench variants rc=$?"
dv_models_wait
echo "$(dv_t)"
for x in 0 2; do echo -n "i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8; done
echo -n "default "; dv_decode fp8-block
echo -n "xpf=0 "; DOTLM_GEMV=xpf=0 dv_decode fp8-block
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D" $L/gpu_bench_var.log
grep -E "^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench_var.log | cut -c1-150
