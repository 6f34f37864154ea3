#!/usr/bin/env bash
# session 47 call 2 (only on an H200; exits at once elsewhere): the
# occupancy caps on the H200, which has never run them: the M = 1 GEMVs
# with occ=6 / i8occ=6 against the defaults, then Qwen3-8B decode at 512,
# interleaved, two rounds (fp8 with occ 6, W8A8 with i8occ 6).
. bench/lib/device_prelude.sh
dv_only_on H200
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block int8
dv_gb dflt
DOTLM_GEMV=default,occ=6,i8occ=6 dv_gb occ6
DOTLM_GEMV=default,occ=7,i8occ=7 dv_gb occ7
dv_gb_table dflt occ6 occ7
dv_t
dv_models_wait
for r in 1 2; do
  dv_decode fp8-block
  DOTLM_GEMV=default,occ=6 dv_decode fp8-block
  dv_decode int8
  DOTLM_GEMV=default,i8occ=6 dv_decode int8
done
dv_finish
