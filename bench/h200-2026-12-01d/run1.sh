#!/usr/bin/env bash
# session 18 call 1: main at the start (the last session's unverified commits + the strict DOTLM_GPU_ATTN_SEG
# parse and its test): GPU tests, fixtures on cuda; what the norms and qk_rope_kv cost (DIAG_SKIP) in bf16 and
# fp8 at 512; segments of 32 against 64 at 1024 and 2048 positions (the by-position switch point)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in fp8-block bf16; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
for t in test_gpu_ops test_gpu_forward; do
  timeout 250 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -iE "CHECK failed|cluster merge" $OUT/l/test_gpu_*.log | head -8
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
wait
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "base:;nonorm:DOTLM_GPU_DIAG_SKIP=norm;noqk:DOTLM_GPU_DIAG_SKIP=qkrope"
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "base:;nonorm:DOTLM_GPU_DIAG_SKIP=norm"
for p in 1024 2048; do
  PLEN=$p KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "s32:DOTLM_GPU_ATTN_SEG=32;s64:DOTLM_GPU_ATTN_SEG=64"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
