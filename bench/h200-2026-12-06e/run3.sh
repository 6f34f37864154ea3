#!/usr/bin/env bash
# session 45 call 3: the occupancy caps as GEMV knobs (occ: the fp8 M = 1
# ring, i8occ: the W8A8 M = 1 register GEMV; DOTLM_OCC_KEEP the shared
# memory left per SM, experiment): the GEMVs alone, fp8 decode at 512,
# then every GPU test (test_gpu_gemv_multi: the knobs' bits and counter)
# and the fixtures.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block
dv_gb dflt
DOTLM_GEMV=default,i8xp=0 dv_gb i8xp0
DOTLM_GEMV=default,i8xp=0,occ=6,i8occ=6 dv_gb occ6
DOTLM_OCC_KEEP=16384 DOTLM_GEMV=default,i8xp=0,occ=6,i8occ=6 dv_gb occ6k
dv_gb_table dflt i8xp0 occ6 occ6k
dv_t
dv_tests
grep -m5 FAIL "$L/test_gpu_gemv_multi.log"
dv_t
dv_models_wait
dv_decode fp8-block
DOTLM_GEMV=default,occ=6 dv_decode fp8-block
echo -n "keep16K "; DOTLM_OCC_KEEP=16384 DOTLM_GEMV=default,occ=6 dv_decode fp8-block
dv_decode fp8-block
DOTLM_GEMV=default,occ=6 dv_decode fp8-block
dv_finish
