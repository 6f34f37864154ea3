#!/usr/bin/env bash
# session 18 call 2: the q/k/v GEMV with the q/k norm + RoPE + KV write in its epilogue (cuda.qkv_rope_kv):
# GPU tests, fixtures on cuda, the GEMV bench (quick), decode on / off in bf16 and fp8 at 512 and 4096
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in fp8-block bf16; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
for t in test_gpu_ops test_gpu_forward test_gpu_gemv_multi; do
  timeout 250 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -iE "CHECK failed|FAIL" $OUT/l/test_gpu_*.log | head -12
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
timeout 120 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; echo "gpu bench rc=$?"; grep -E '^copy|[0-9]x[0-9]+ +1 ' $OUT/l/gpu_bench.log | head -12
wait
for f in bf16 fp8-block; do
  KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "on:;off:DOTLM_DISABLE=cuda.qkv_rope_kv" "on:;off:DOTLM_DISABLE=cuda.qkv_rope_kv"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
