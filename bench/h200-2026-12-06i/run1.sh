#!/usr/bin/env bash
# session 49 call 1, either card. Any card: the 8B M = 1 GEMVs with no cap
# and with occupancy caps of 6 and 7 (dv_gb_caps' first run on a device).
# On an H200 also what bench/h200-2026-12-06h/run2.sh was for: Qwen3-8B
# and Qwen3-14B decode with and without the caps, interleaved, two rounds.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $DV_GPU"
case "$DV_GPU" in
*H200*) dv_models fp8-block int8; dv_models --preset qwen3-14b fp8-block int8 ;;
esac
dv_gb_caps 6 7
dv_t
case "$DV_GPU" in
*H200*)
  dv_models_wait
  dv_occ_rounds "" ""
  dv_t
  dv_occ_rounds "14b " _14b
  dv_t ;;
esac
dv_finish
