#!/usr/bin/env bash
# session 19 call 7: the W8A8 GEMV quantizing its own row at M = 1 (cuda.int8_gemv_aq: o_proj's input, no actq.int8
# launch): GPU tests, int8 decode A/B against DOTLM_DISABLE=cuda.int8_gemv_aq (interleaved) at 512 and 4096, fixtures
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-int8 --preset qwen3-8b --format int8 > $OUT/l/gen_int8.log 2>&1; echo "gen int8 rc=$?") &
timeout 200 /tmp/r/test_gpu_forward > $OUT/l/test_gpu_forward.log 2>&1; echo "test_gpu_forward rc=$?: $(tail -1 $OUT/l/test_gpu_forward.log)"
grep -iE "CHECK failed" $OUT/l/test_gpu_forward.log | head -5
wait
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh int8 "aq:;sep:DOTLM_DISABLE=cuda.int8_gemv_aq;aq2:;sep2:DOTLM_DISABLE=cuda.int8_gemv_aq" "aq:;sep:DOTLM_DISABLE=cuda.int8_gemv_aq"
timeout 250 /tmp/r/test_gpu_ops > $OUT/l/test_gpu_ops.log 2>&1; echo "test_gpu_ops rc=$?: $(tail -1 $OUT/l/test_gpu_ops.log)"
grep -iE "CHECK failed" $OUT/l/test_gpu_ops.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
cd $OUT && tar czf logs.tgz l && rm -rf l
