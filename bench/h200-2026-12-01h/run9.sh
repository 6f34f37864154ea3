#!/usr/bin/env bash
# session 22 call 9: the run7 build: bf16 decode after 4096 with the key-lane attention against
# DOTLM_GPU_ATTN_KL=0, and the copy bandwidth
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
timeout 40 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/copy.log 2>&1; grep -m1 "copy D2D" $L/copy.log
OUT=$L PLEN=4096 tools/dev_e2e_ab.sh bf16 "kl:;split:DOTLM_GPU_ATTN_KL=0"
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
