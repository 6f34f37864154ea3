#!/usr/bin/env bash
# session 21 call 4 (the run3 build; its experiment variable unset = main's kernels): fp8 decode at 512 with
# the three-stage weight ring (DOTLM_GEMV=ring=2: two chunks requested before the PDL wait) against the default
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
timeout 40 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/copy.log 2>&1; grep -m1 "copy D2D" $L/copy.log
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "ring1:;ring2:DOTLM_GEMV=ring=2;wpb8:DOTLM_GEMV=wpb=8"
tar czf $OUT/logs.tgz -C $L .
