#!/usr/bin/env bash
# session 55, H200 only, for a call with ~300 s of device time left: the
# first run of the fp8 ring's occupancy cap by device on an H200 (occ=6
# there by default since the fifty-third session). test_gpu_forward (the
# rule checked on the whole device, where an H200 takes the cap, and on a
# 16-SM partition), the M = 1 GEMVs by default and with the cap named off
# (occ=0), then the first round of the fp8 knob sweep
# (bench/h200-2026-12-06i/run2.sh with DV_SWEEP_ONLY=1: no decode).
. bench/lib/device_prelude.sh
dv_only_on H200
dv_init
echo "gpu: $DV_GPU"
dv_test test_gpu_forward
dv_forward_lines
dv_gb dflt
DOTLM_GEMV=default,occ=0 dv_gb occ0
dv_gb_table dflt occ0
dv_pack
dv_t
DV_SWEEP_ONLY=1 bash bench/h200-2026-12-06i/run2.sh
