#!/usr/bin/env bash
# session 47 call 3 (only on an H200; exits at once elsewhere): run2 cut
# to what the last ~270 s of device time allow: the M = 1 GEMVs with
# occ=6 / i8occ=6 against the defaults, no decode.
. bench/lib/device_prelude.sh
dv_only_on H200
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_gb dflt
DOTLM_GEMV=default,occ=6,i8occ=6 dv_gb occ6
dv_gb_table dflt occ6
dv_finish
