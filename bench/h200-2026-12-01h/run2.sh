#!/usr/bin/env bash
# session 22 call 2: why the L2 prefetch slowed decode in run1: its launch cost alone (mb=1), small caps,
# the ordinary eviction policy, and the requests made only after the kernel ahead ends
# (DOTLM_GPU_L2PF_WAIT=first), fp8 decode at 512
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
timeout 40 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/copy.log 2>&1; grep -m1 "copy D2D" $L/copy.log
W="DOTLM_GPU_L2PF_WAIT=first"
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "off:DOTLM_GPU_L2PF=off;mb1:DOTLM_GPU_L2PF=mb=1;mb4:DOTLM_GPU_L2PF=mb=4;n8:DOTLM_GPU_L2PF=mb=8,pol=normal;w1:DOTLM_GPU_L2PF=mb=1 $W;w4:DOTLM_GPU_L2PF=mb=4 $W;w16:DOTLM_GPU_L2PF=mb=16 $W;w16n:DOTLM_GPU_L2PF=mb=16,pol=normal $W;w40:DOTLM_GPU_L2PF=mb=40 $W"
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
