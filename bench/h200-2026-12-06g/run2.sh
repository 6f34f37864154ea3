#!/usr/bin/env bash
# session 47 call 2 (only on an H200; exits at once elsewhere): the
# occupancy caps on the H200, which has never run them: the M = 1 GEMVs
# with occ=6 / i8occ=6 against the defaults, then Qwen3-8B decode at 512,
# interleaved, two rounds (fp8 with occ 6, W8A8 with i8occ 6).
. bench/lib/device_prelude.sh
dv_only_on H200
dv_init
echo "gpu: $DV_GPU"
dv_models fp8-block int8
dv_gb_caps 6 7
dv_t
dv_models_wait
dv_occ_rounds "" ""
dv_finish
