#!/usr/bin/env bash
# session 16 call 2: the fp8 ring with loop-carried row pointers and one scale row per group (dl_gv_scale_shared), dl_amax4;
# GPU tests, the GEMV bench with h2x in the ring, fp8 decode A/B
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
(KEEP=1 timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen.log 2>&1; echo "gen rc=$?") &
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward; do
  timeout 240 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -i "CHECK failed" $OUT/l/test_gpu_*.log | head -5
wait
DOTLM_GEMV_VARIANTS="default;default,fp8=h2x" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep > $OUT/l/bench.log 2>&1; echo "bench rc=$?"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 200 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "new:;h2x:DOTLM_GEMV=default,fp8=h2x;reg:DOTLM_GEMV=default,ring=0" "new:;h2x:DOTLM_GEMV=default,fp8=h2x"
SEC="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats"
timeout 150 ncu --clock-control none $SEC -k regex:dl_k_gemv_fa --launch-count 1 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/ncu_engine.log 2>&1; echo "ncu engine rc=$?"
grep -E "Duration|Executed Instructions  |Registers Per|Issued Warp Per|DRAM Throughput" $OUT/l/ncu_engine.log
echo "== summary =="
grep -E "^fp8 block .* [1248]  " $OUT/l/bench.log; grep -E "copy D2D" $OUT/l/bench.log
grep -E "^fp8 block .*(q/k/v|gate)" $OUT/l/bench.log
cd $OUT && tar czf logs.tgz l && rm -rf l
