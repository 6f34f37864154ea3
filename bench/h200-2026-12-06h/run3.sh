#!/usr/bin/env bash
# session 48 call 3, either card: run2's decodes printed no counters, so
# this shows that the caps were applied there: Qwen3-14B fp8 with occ=6
# and W8A8 with i8occ=6 at 512 with --stats (cuda.gemv_occ counts the
# padded launches). On an H200 first the 8B M = 1 GEMVs with and without
# the caps, which that card has never run.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $DV_GPU"
dv_models --preset qwen3-14b fp8-block int8
case "$DV_GPU" in
*H200*) dv_gb_caps 6 ;;
esac
dv_models_wait
echo -n "14b "; DOTLM_GEMV=default,occ=6 dv_decode fp8-block_14b
echo -n "14b "; DOTLM_GEMV=default,i8occ=6 dv_decode int8_14b
grep -h -E "gemv_occ|gemv_ring " $L/dec_*.log
dv_t
dv_finish
