#!/usr/bin/env bash
# session 20 call 9 (the run7 build: main as it stands): int8 decode at 512, two runs, and the copy bandwidth
mkdir -p $OUT/l; tar xJf .devpack/devrun.tar.xz -C /tmp/r 2>/dev/null || { mkdir -p /tmp/r; tar xJf .devpack/devrun.tar.xz -C /tmp/r; }; export LD_LIBRARY_PATH=/tmp/r/lib; nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt; timeout 40 /tmp/r/dotlm_gpu_bench --no-sweep --quick > /tmp/gb.log 2>&1; grep -m1 "copy D2D" /tmp/gb.log; OUT=$OUT/l tools/dev_e2e_ab.sh int8 "main:"
