#!/usr/bin/env bash
# session 17 call 6: segments by the row's position (32 below 1024, 64 from there; the new default) against
# fixed 64 (the order before): GPU tests under both, fixtures on cuda, decode A/B in three formats, 512 and 4096
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in fp8-block bf16 int8; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
for t in test_gpu_ops test_gpu_forward; do
  timeout 250 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
DOTLM_GPU_ATTN_SEG=64 timeout 200 /tmp/r/test_gpu_forward > $OUT/l/test_gpu_forward_seg64.log 2>&1; echo "test_gpu_forward seg64 rc=$?: $(tail -1 $OUT/l/test_gpu_forward_seg64.log)"
grep -iE "CHECK failed|cluster merge" $OUT/l/test_gpu_*.log | head -8
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
wait
V="pos:;s64:DOTLM_GPU_ATTN_SEG=64"
for f in fp8-block bf16 int8; do
  KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "$V" "$V"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
