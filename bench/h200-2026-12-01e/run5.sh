#!/usr/bin/env bash
# session 19 call 5 (the run4 build: main's kernels, the experiment knob at its default): where a decode step's
# time goes today (DOTLM_GPU_DIAG_SKIP, outputs wrong by design): every GEMV left out, and everything but the
# GEMVs left out, against the full step; fp8, bf16, int8 at 512
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in bf16 int8; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; done) &
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -m1 "copy D2D" $OUT/l/gpu_bench.log
A="full:;nogemv:DOTLM_GPU_DIAG_SKIP=matmul;gemvonly:DOTLM_GPU_DIAG_SKIP=norm,qkrope,attn,combine,silu,actq"
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "$A"
wait
for f in bf16 int8; do KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "$A"; done
cd $OUT && tar czf logs.tgz l && rm -rf l
