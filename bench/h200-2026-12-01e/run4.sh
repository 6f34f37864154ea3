#!/usr/bin/env bash
# session 19 call 4 (main plus an experiment knob, DOTLM_GEMV_KSCAP): bf16 decode at 512 with the 16-bit GEMVs'
# K split capped at 2 warps (every Qwen3-8B bf16 weight splits over 4 by default), also with 4 vectors in flight
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "base:;cap2:DOTLM_GEMV_KSCAP=2;cap2u4:DOTLM_GEMV_KSCAP=2 DOTLM_GEMV=default,u=4" "base:;cap2:DOTLM_GEMV_KSCAP=2"
timeout 120 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -E '^copy|bf16 .*x[0-9]+ +1 ' $OUT/l/gpu_bench.log | head -8
DOTLM_GEMV_KSCAP=2 timeout 120 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench_cap2.log 2>&1; grep -E 'bf16 .*x[0-9]+ +1 ' $OUT/l/gpu_bench_cap2.log | head -6
cd $OUT && tar czf logs.tgz l && rm -rf l
