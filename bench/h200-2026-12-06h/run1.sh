#!/usr/bin/env bash
# session 48 call 1, either card: every GPU test and the fixtures on the
# build with the refactored dl_occ_pad (c2f4845, never run on a GPU),
# then the M = 1 GEMVs with and without the occupancy caps. On an H200
# (which has never run the caps) also caps of 7 and Qwen3-8B decode at
# 512, interleaved, two rounds (fp8 with occ 6, W8A8 with i8occ 6).
. bench/lib/device_prelude.sh
dv_init
g=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "gpu: $g"
dv_models fp8-block int8
dv_gb dflt
DOTLM_GEMV=default,occ=6,i8occ=6 dv_gb occ6
case "$g" in
*H200*)
  DOTLM_GEMV=default,occ=7,i8occ=7 dv_gb occ7
  dv_gb_table dflt occ6 occ7 ;;
*) dv_gb_table dflt occ6 ;;
esac
dv_t
dv_tests
grep -m5 FAIL "$L/test_gpu_gemv_multi.log"
dv_t
case "$g" in
*H200*)
  dv_models_wait
  for r in 1 2; do
    dv_decode fp8-block
    DOTLM_GEMV=default,occ=6 dv_decode fp8-block
    dv_decode int8
    DOTLM_GEMV=default,i8occ=6 dv_decode int8
  done ;;
esac
dv_finish
