#!/usr/bin/env bash
# session 16 call 5: + K-split placement by shifts (dl_gv_place, dl_cdiv_p2): GPU tests, fixtures, sweep + bench, decode every format
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
(for f in fp8-block int8 bf16; do timeout 250 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward test_gpu_gdn; do
  timeout 240 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -i "CHECK failed" $OUT/l/test_gpu_*.log | head -5
timeout 150 /tmp/r/dotlm_gpu_bench > $OUT/l/bench.log 2>&1; echo "bench rc=$?: $(tail -1 $OUT/l/bench.log)"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 200 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
wait
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "new:;h2x:DOTLM_GEMV=default,fp8=h2x" "new:;h2x:DOTLM_GEMV=default,fp8=h2x"
for f in int8 bf16; do KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "new:" "new:"; done
echo "== summary =="
grep -E "^(bf16|fp8 block|int8 W8A8) .* 1  " $OUT/l/bench.log; grep -E "copy D2D" $OUT/l/bench.log
grep -E " 1 .*%" $OUT/l/bench.log | grep -E "q/k/v|gate" 
cd $OUT && tar czf logs.tgz l && rm -rf l
