#!/usr/bin/env bash
# session 18 call 7: the final build (segments by position switch to 64 at 640 instead of 1024): GPU tests, fixtures
# on cuda; decode in three formats at 512 and 4096, and at 640 by position (now 64) against segments of 32
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in fp8-block bf16 int8; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
for t in test_gpu_ops test_gpu_forward; do
  timeout 250 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -iE "CHECK failed" $OUT/l/test_gpu_*.log | head -8
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
wait
for f in fp8-block bf16 int8; do
  KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "final:" "final:"
  PLEN=640 KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "pos:;s32:DOTLM_GPU_ATTN_SEG=32"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
