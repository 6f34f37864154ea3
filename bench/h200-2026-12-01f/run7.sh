#!/usr/bin/env bash
# session 20 call 7: the 16/32-bit GEMV without its per-chunk scale load as the default (cuda.gemv_unscaled,
# switch and counter): test_gpu_gemv_multi (bitwise against the scale-load path, counted), the GPU tests,
# fixtures on cuda, decode A/B at 512 against DOTLM_DISABLE=cuda.gemv_unscaled (bf16, fp8)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in bf16 fp8-block; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; done) &
for t in test_gpu_gemv_multi test_gpu_forward test_gpu_ops; do
  timeout 150 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -iE "CHECK failed" $OUT/l/test_gpu_*.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 120 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -m1 "copy D2D" $OUT/l/gpu_bench.log
wait
for f in bf16 fp8-block; do KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "on:;off:DOTLM_DISABLE=cuda.gemv_unscaled"; done
/tmp/r/dotlm bench --model /dev/shm/q8b-bf16 --backend cuda --prompt-len 64 --gen 8 --stats > $OUT/l/stats.log 2>&1; grep -E "gemv_unscaled" $OUT/l/stats.log
