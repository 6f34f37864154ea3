#!/usr/bin/env bash
# session 16 call 1: GEMV chains timed eagerly and replayed from a graph; the lab's ring against the engine's; ncu of both
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,clocks.max.sm --format=csv,noheader
(nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/lab bench/lab/gemv_lab.cu > $OUT/l/lab_build.log 2>&1; echo "lab build rc=$?") &
for i in 1 2; do timeout 120 /tmp/r/dotlm_gpu_bench --no-sweep > $OUT/l/bench_$i.log 2>&1; echo "bench $i rc=$?"; done
wait
for s in 0 1 2; do timeout 120 /tmp/lab 40 $s > $OUT/l/lab_$s.log 2>&1; echo "lab $s rc=$?"; done
SEC="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats"
timeout 150 ncu --clock-control none $SEC -k regex:dl_k_gemv_fa --launch-count 2 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/ncu_engine.log 2>&1; echo "ncu engine rc=$?"
timeout 150 ncu --clock-control none $SEC -k regex:k_cpa --launch-skip 0 --launch-count 1 /tmp/lab 5 0 > $OUT/l/ncu_lab.log 2>&1; echo "ncu lab rc=$?"
echo "== summary =="
for i in 1 2; do grep -E "^(bf16|fp8 block|int8 W8A8) .* 1  " $OUT/l/bench_$i.log; grep -E "copy D2D" $OUT/l/bench_$i.log; done
grep -E " 1 .*%" $OUT/l/bench_1.log | grep -i "q/k/v\|gate" | head -6
for s in 0 1 2; do grep -E "^(cpa|reg R4 U2 KS1 wpb4  |reg R4 U2 KS1 wpb4 loadonly)" $OUT/l/lab_$s.log | head -4; done
grep -A12 "PDL, late trigger" $OUT/l/lab_0.log | head -14
cd $OUT && tar czf logs.tgz l && rm -rf l
