#!/usr/bin/env bash
# session 16 call 13: the float GEMV's K-split bound at 16384 rows (gate/up split): GPU tests, fixtures, bf16 decode
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-bf16 --preset qwen3-8b --format bf16 > $OUT/l/gen.log 2>&1; echo "gen rc=$?") &
for t in test_gpu_gemv_multi test_gpu_forward test_gpu_ops; do
  timeout 200 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -i "CHECK failed" $OUT/l/test_gpu_*.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
wait
OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "ks16k:;ks8k:DOTLM_GEMV_KSMAXN=8192"
cd $OUT && tar czf logs.tgz l && rm -rf l
