#!/usr/bin/env bash
# session 19 call 8: main as it stands (d0d3152: the twelfth session's kernels, both experiments reverted): GPU tests
# and fixtures on cuda, fp8 / bf16 / int8 decode at 512 (two runs each)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in fp8-block bf16 int8; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; done) &
for t in test_gpu_ops test_gpu_forward test_gpu_gdn; do
  timeout 200 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -iE "CHECK failed" $OUT/l/test_gpu_*.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
wait
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -m1 "copy D2D" $OUT/l/gpu_bench.log
for f in fp8-block bf16 int8; do KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "main:"; done
cd $OUT && tar czf logs.tgz l && rm -rf l
