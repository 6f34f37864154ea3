#!/usr/bin/env bash
# session 21 call 8: the engine's and the server's logits buffers page-locked (be_host_alloc, cuda.host_pinned):
# test_gpu_ops / forward, fixtures on cuda, decode A/B at 512 against DOTLM_DISABLE=cuda.host_pinned in bf16,
# fp8 block and int8, and the copy bandwidth for the floors
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
for f in bf16 fp8-block int8; do
  (timeout 250 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $L/gen_$f.log 2>&1) &
done
for t in test_gpu_ops test_gpu_forward; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"
done
grep -iE "CHECK failed" $L/test_gpu_*.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 120 python3 tests/py/test_fixtures.py > $L/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures_cuda.log)"
timeout 40 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/copy.log 2>&1; grep -m1 "copy D2D" $L/copy.log
wait
for f in bf16 fp8-block int8; do
  KEEP=1 OUT=$L tools/dev_e2e_ab.sh $f "pinned:;pageable:DOTLM_DISABLE=cuda.host_pinned"
done
/tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 64 --gen 8 --stats > $L/stats.log 2>&1; grep -E "host_pinned" $L/stats.log
tar czf $OUT/logs.tgz -C $L .
