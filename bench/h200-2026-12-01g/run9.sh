#!/usr/bin/env bash
# session 21 call 9 (the run8 build = main at 9248b47): knobs re-measured in decode at 512 with today's kernels:
# int8 with the W8A8 weight ring (i8ring=1) and with the W8A8 K split by shape (i8ks=0); fp8 with the late
# PDL trigger after every GEMV (DOTLM_GEMV_TRIG=late)
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
timeout 40 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/copy.log 2>&1; grep -m1 "copy D2D" $L/copy.log
KEEP=1 OUT=$L tools/dev_e2e_ab.sh int8 "main:;i8ring:DOTLM_GEMV=i8ring=1;i8ks:DOTLM_GEMV=i8ks=0"
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "main:;late:DOTLM_GEMV_TRIG=late"
tar czf $OUT/logs.tgz -C $L .
