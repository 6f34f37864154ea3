#!/usr/bin/env bash
# session 53 call 2, either card: test_gpu_forward now also counts the fp8
# fixture's capped M = 1 launches (the cap's default must run where it is
# 6, e.g. on an H100's 16-SM partition, and not where it is 0). On an H200
# then bench/h200-2026-12-06i/run2.sh (the fp8 ring's knob sweep).
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $DV_GPU"
timeout 200 "$B/test_gpu_forward" >"$L/test_gpu_forward.log" 2>&1
echo "test_gpu_forward rc=$? $(tail -1 "$L/test_gpu_forward.log")"
grep -m3 -E "FAIL|^DOTLM_GPU_SMS=16" "$L/test_gpu_forward.log"
dv_h200_then bench/h200-2026-12-06i/run2.sh
