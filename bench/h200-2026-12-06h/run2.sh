#!/usr/bin/env bash
# session 48 call 2, either card: the occupancy caps in the decode of the
# Qwen3-14B-shaped models, whose down projection (5120x17408) is the #4
# GEMV shape the fp8 cap lifts most in the GEMV-after-GEMV chain (and
# gate/up -> down is the step's one such pair). Interleaved, two rounds
# at 512: fp8 with occ 6, W8A8 with i8occ 6. On an H200 first what
# bench/h200-2026-12-06g/run2.sh was for: the 8B GEMVs with caps of 6
# and 7 and Qwen3-8B decode with the caps.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $DV_GPU"
dv_models --preset qwen3-14b fp8-block int8
case "$DV_GPU" in
*H200*)
  dv_models fp8-block int8
  dv_gb_caps 6 7
  dv_models_wait
  dv_occ_rounds "" "" ;;
*) dv_copy_bw ;;
esac
dv_t
dv_models_wait
dv_occ_rounds "14b " _14b
dv_t
dv_finish
