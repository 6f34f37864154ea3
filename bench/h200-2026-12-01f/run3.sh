#!/usr/bin/env bash
# session 20 call 3 (the run2 build; both experiments at their off defaults, so main's kernels): bf16 launch-shape
# knobs at M = 1 (4 rows per warp, 4 vectors in flight) and what each GEMV launch shape costs in place
# (DOTLM_GPU_DIAG_SKIP=matmul:NxK, outputs wrong by design), bf16 and fp8 at 512
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen_fp8.log 2>&1) &
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -m1 "copy D2D" $OUT/l/gpu_bench.log
S="qkv:DOTLM_GPU_DIAG_SKIP=matmul:6144x4096;o:DOTLM_GPU_DIAG_SKIP=matmul:4096x4096;gu:DOTLM_GPU_DIAG_SKIP=matmul:24576x4096;down:DOTLM_GPU_DIAG_SKIP=matmul:4096x12288"
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "off:;r4:DOTLM_GEMV=r1=4;u4:DOTLM_GEMV=u=4;$S"
wait
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "off:;$S"
cd $OUT && tar czf logs.tgz l && rm -rf l
