#!/usr/bin/env bash
# session 46, the last device minutes: run1 cut to fit (every GPU test and
# the fixtures on the dl_occ_pad build, the M = 1 GEMVs with occ=6 /
# i8occ=6, one interleaved decode round at 512).
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block int8
dv_tests
grep -m5 FAIL "$L/test_gpu_gemv_multi.log"
dv_t
dv_gb dflt
DOTLM_GEMV=default,occ=6,i8occ=6 dv_gb occ6
dv_gb_table dflt occ6
dv_t
dv_models_wait
dv_decode fp8-block
DOTLM_GEMV=default,occ=6 dv_decode fp8-block
dv_decode int8
DOTLM_GEMV=default,i8occ=6 dv_decode int8
dv_finish
