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
g=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "gpu: $g"
dv_models --preset qwen3-14b fp8-block int8
case "$g" in
*H200*)
  dv_models fp8-block int8
  dv_gb dflt
  DOTLM_GEMV=default,occ=6,i8occ=6 dv_gb occ6
  DOTLM_GEMV=default,occ=7,i8occ=7 dv_gb occ7
  dv_gb_table dflt occ6 occ7
  dv_models_wait
  for r in 1 2; do
    dv_decode fp8-block
    DOTLM_GEMV=default,occ=6 dv_decode fp8-block
    dv_decode int8
    DOTLM_GEMV=default,i8occ=6 dv_decode int8
  done ;;
*) timeout 25 stdbuf -oL "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/peaks.log" 2>&1
   grep -m1 "copy D2D" "$L/peaks.log" ;;
esac
dv_t
dv_models_wait
for r in 1 2; do
  echo -n "14b "; dv_decode fp8-block_14b
  echo -n "14b "; DOTLM_GEMV=default,occ=6 dv_decode fp8-block_14b
  echo -n "14b "; dv_decode int8_14b
  echo -n "14b "; DOTLM_GEMV=default,i8occ=6 dv_decode int8_14b
done
dv_t
dv_finish
