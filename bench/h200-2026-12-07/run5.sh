#!/usr/bin/env bash
# session 56, either card: on an H200 the full run1.sh (every GPU test,
# the M = 1 GEMVs with and without the fp8 cap, the knob sweep and its
# decode). On any other card only test_gpu_forward, which ca27ee2 and
# febba6c changed after its last device run (run3, a65b8dc): the occ rule
# on the whole device and on a 16-SM partition. An H100 cannot rank the
# H200's knobs, so it runs nothing else. `run5.sh short` takes run4.sh
# (no decode; ~300 s) on an H200 instead, for a call with little time left.
. bench/lib/device_prelude.sh
case "$(dv_gpu_name)" in
*H200*)
    [ "${1:-}" = short ] && exec bash bench/h200-2026-12-07/run4.sh
    exec bash bench/h200-2026-12-07/run1.sh ;;
esac
dv_init
echo "gpu: $DV_GPU (not an H200: test_gpu_forward only)"
dv_test test_gpu_forward
dv_forward_lines
dv_pack
dv_t
