#!/usr/bin/env bash
# session 15 call 6: the final build (16-bit GEMV at M = 1: 2 rows per warp): GPU tests, fixtures, decode A/B every format
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward; do
  timeout 240 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -i "CHECK failed" $OUT/l/test_gpu_*.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 200 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
# r1=1 is the previous 16-bit launch shape; it would also give fp8 one row, so fp8 runs only the new
# default (int8's old/new differ only in the bf16 logits GEMV)
for f in bf16 int8; do
  OUT=$OUT/l tools/dev_e2e_ab.sh $f "new:;old:DOTLM_GEMV=default,r1=1" "new:"
done
OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "new:" "new:"
cd $OUT && tar czf logs.tgz l && rm -rf l
