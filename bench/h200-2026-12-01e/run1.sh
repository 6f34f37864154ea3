#!/usr/bin/env bash
# session 19 call 1: the RMSNorm in the q/k/v and gate/up GEMVs' prologue (cuda.norm_gemv): GPU tests, decode A/B
# (fused against DOTLM_DISABLE=cuda.norm_gemv, interleaved) in fp8 and bf16 at 512 and 4096, fixtures on cuda
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in fp8-block bf16; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
timeout 250 /tmp/r/test_gpu_ops > $OUT/l/test_gpu_ops.log 2>&1; echo "test_gpu_ops rc=$?: $(tail -1 $OUT/l/test_gpu_ops.log)"
grep -iE "CHECK failed|norm_gemv" $OUT/l/test_gpu_ops.log | head -8
wait
for f in fp8-block bf16; do
  KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "fused:;sep:DOTLM_DISABLE=cuda.norm_gemv" "fused:;sep:DOTLM_DISABLE=cuda.norm_gemv"
done
timeout 200 /tmp/r/test_gpu_forward > $OUT/l/test_gpu_forward.log 2>&1; echo "test_gpu_forward rc=$?: $(tail -1 $OUT/l/test_gpu_forward.log)"
grep -iE "CHECK failed" $OUT/l/test_gpu_forward.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -m1 "copy D2D" $OUT/l/gpu_bench.log
cd $OUT && tar czf logs.tgz l && rm -rf l
