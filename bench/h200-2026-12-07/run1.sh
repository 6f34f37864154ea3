#!/usr/bin/env bash
# session 53, either card: the first GPU run of the fp8 ring's occupancy
# cap by device (occ=6 where the device gives >= 32 GB/s per SM, i.e. an
# H200; 0 elsewhere). Any card: every GPU test and the fixtures
# (test_gpu_forward checks the rule on the whole device and on a 16-SM
# partition, where an H100 takes the cap by default and must give the
# whole device's bits), then the M = 1 GEMVs by default and with the cap
# named off (occ=0). On an H200 also bench/h200-2026-12-06i/run2.sh: the
# fp8 ring's knob sweep (with occ=0 among its variants) and Qwen3-8B fp8
# decode of the best against the default.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $DV_GPU"
dv_tests
dv_forward_lines
grep -m3 FAIL "$L/test_gpu_gemv_multi.log"
dv_gb dflt
DOTLM_GEMV=default,occ=0 dv_gb occ0
dv_gb_table dflt occ0
dv_h200_then bench/h200-2026-12-06i/run2.sh
