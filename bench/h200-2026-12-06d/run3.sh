#!/usr/bin/env bash
# session 44 call 3 (an H200, warm after run2): the M = 1 GEMVs on all 132
# SMs and on 120 / 104 / 96 (DOTLM_GPU_SMS): does the early-trigger chain
# on the H200 gain with fewer SMs, as on the H100 (run1)? Variants: the
# default, fp8=hf, 2 rows per warp (r1=2), i8xp=1. Then fp8 decode with
# r1=2 and hf against the default, interleaved.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block
dv_gemv_sms "default;default,fp8=hf;default,r1=2;default,i8xp=1" all 120 104 96
dv_models_wait
for r in 1 2; do
  dv_decode fp8-block
  DOTLM_GEMV=default,fp8=hf dv_decode fp8-block
  DOTLM_GEMV=default,r1=2 dv_decode fp8-block
  DOTLM_GPU_SMS=120 dv_decode fp8-block
done
python3 bench/lib/sms_table.py $L
dv_finish
