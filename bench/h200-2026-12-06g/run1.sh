#!/usr/bin/env bash
# session 47 call 1: the occupancy caps (knobs occ, i8occ) through
# dl_occ_pad (queries once per kernel, block size, bytes and cap; caps
# only for grids of at most N blocks per SM): every GPU test and the
# fixtures, the M = 1 GEMVs at 6 blocks per SM, then decode at 512
# interleaved (fp8 with occ 6, W8A8 at the device's default i8xp
# with i8occ 6).
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block int8
dv_gb dflt
DOTLM_GEMV=default,occ=6,i8occ=6 dv_gb occ6
dv_gb_table dflt occ6
dv_t
dv_tests
grep -m5 FAIL "$L/test_gpu_gemv_multi.log"
dv_t
dv_models_wait
for r in 1 2; do
  dv_decode fp8-block
  DOTLM_GEMV=default,occ=6 dv_decode fp8-block
  dv_decode int8
  DOTLM_GEMV=default,i8occ=6 dv_decode int8
done
dv_finish
