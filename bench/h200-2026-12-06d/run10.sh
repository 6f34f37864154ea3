#!/usr/bin/env bash
# session 44 call 10: after review, gpurt_open resets the cached SM count
# (a whole-device backend after a partition must not keep its count):
# test_gpu_forward, the partition and the server once more.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 200 $B/test_gpu_forward > $L/test_gpu_forward.log 2>&1
echo "test_gpu_forward rc=$? $(tail -1 $L/test_gpu_forward.log)"
grep -E "DOTLM_GPU_SMS=16|FAIL|failed:" $L/test_gpu_forward.log | head -4
dv_finish
