#!/usr/bin/env bash
# session 15 call 4: the final build: GPU tests, fixtures on cuda, each GEMV launch shape left out in turn, decode figures
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for t in test_gpu_ops test_gpu_forward test_gpu_gdn; do
  timeout 200 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -i "CHECK failed" $OUT/l/test_gpu_*.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 200 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
S="mqkv:DOTLM_GPU_DIAG_SKIP=matmul:6144x4096;mo:DOTLM_GPU_DIAG_SKIP=matmul:4096x4096;mgu:DOTLM_GPU_DIAG_SKIP=matmul:24576x4096;mdown:DOTLM_GPU_DIAG_SKIP=matmul:4096x12288;mlm:DOTLM_GPU_DIAG_SKIP=matmul:151936x4096"
for f in fp8-block int8 bf16; do
  OUT=$OUT/l tools/dev_e2e_ab.sh $f "base:;$S" "base:"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
