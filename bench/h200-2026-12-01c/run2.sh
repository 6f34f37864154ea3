#!/usr/bin/env bash
# session 17 call 2: the cluster merge of the split decode attention (cuda.attention.cluster): GPU tests,
# fixtures on cuda, decode A/B (on / off / late trigger) in bf16, fp8 block and int8 at 512, and 4096
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in bf16 fp8-block int8; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
for t in test_gpu_ops test_gpu_forward; do
  timeout 200 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -iE "CHECK failed|cluster merge" $OUT/l/test_gpu_*.log | head -8
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
wait
DOTLM_GPU_ATTN_CL_TRIG=x /tmp/r/dotlm bench --model /dev/shm/q8b-bf16 --backend cuda --prompt-len 512 --gen 8 --stats 2>&1 | grep -E 'attention\.(cluster|combine|split)' | head -5
V="cl:;nocl:DOTLM_DISABLE=cuda.attention.cluster;late:DOTLM_GPU_ATTN_CL_TRIG=late"
for f in bf16 fp8-block int8; do
  KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "$V" "cl:"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
