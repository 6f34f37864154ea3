#!/usr/bin/env bash
# session 48 call 1, either card: every GPU test and the fixtures on the
# build with the refactored dl_occ_pad (c2f4845, never run on a GPU),
# then the M = 1 GEMVs with and without the occupancy caps. On an H200
# (which has never run the caps) also caps of 7 and Qwen3-8B decode at
# 512, interleaved, two rounds (fp8 with occ 6, W8A8 with i8occ 6).
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $DV_GPU"
dv_models fp8-block int8
case "$DV_GPU" in
*H200*) dv_gb_caps 6 7 ;;
*) dv_gb_caps 6 ;;
esac
dv_t
dv_tests
grep -m5 FAIL "$L/test_gpu_gemv_multi.log"
dv_t
case "$DV_GPU" in
*H200*)
  dv_models_wait
  dv_occ_rounds "" "" ;;
esac
dv_finish
