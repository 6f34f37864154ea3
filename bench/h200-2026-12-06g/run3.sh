#!/usr/bin/env bash
# session 47 call 3 (only on an H200; exits at once elsewhere): run2 cut
# to what the last ~270 s of device time allow: the M = 1 GEMVs with
# occ=6 / i8occ=6 against the defaults, no decode.
. bench/lib/device_prelude.sh
dv_only_on H200
dv_init
echo "gpu: $DV_GPU"
dv_gb_caps 6
dv_finish
