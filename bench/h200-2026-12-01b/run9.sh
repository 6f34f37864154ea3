#!/usr/bin/env bash
# session 16 call 9: fold as the e4m3 default at M <= 2 (cuda.gemv_fold): GPU tests, fixtures, fp8 decode fold vs h2
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,uuid --format=csv,noheader
(timeout 250 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen.log 2>&1; echo "gen rc=$?") &
for t in test_gpu_gemv_multi test_gpu_forward test_gpu_ops; do
  timeout 240 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -i "CHECK failed" $OUT/l/test_gpu_*.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 200 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
timeout 100 /tmp/r/dotlm_gpu_bench --no-sweep > $OUT/l/bench.log 2>&1; echo "bench rc=$?"
wait
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "fold:;h2:DOTLM_DISABLE=cuda.gemv_fold" "fold:;h2:DOTLM_DISABLE=cuda.gemv_fold"
timeout 100 /tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 512 --gen 64 --stats > $OUT/l/stats.log 2>&1; grep -E "gemv_fold|gemv_ring|^decode" $OUT/l/stats.log | head -5
echo "== summary =="
grep -E "^fp8 block .* 1  " $OUT/l/bench.log; grep -E "copy D2D" $OUT/l/bench.log; grep -E "^fp8 block .*(q/k/v|gate).* 1 " $OUT/l/bench.log
cd $OUT && tar czf logs.tgz l && rm -rf l
