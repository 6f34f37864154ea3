#!/usr/bin/env bash
# session 16 call 4: the engine's fp8 ring against the lab's under ncu, steady-state launches, source counters
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvcc -O3 -arch=sm_90 -std=c++17 -lineinfo -o /tmp/lab bench/lab/gemv_lab.cu > $OUT/l/lab_build.log 2>&1; echo "lab build rc=$?"
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters --section MemoryWorkloadAnalysis --section InstructionStats --section LaunchStats --section Occupancy"
timeout 200 ncu --clock-control none --cache-control none $SEC -k regex:dl_k_gemv_fa --launch-skip 20 --launch-count 1 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/ncu_engine.log 2>&1; echo "ncu engine rc=$?"
timeout 200 ncu --clock-control none --cache-control none $SEC -k regex:k_cpa --launch-skip 8 --launch-count 1 /tmp/lab 5 0 > $OUT/l/ncu_lab.log 2>&1; echo "ncu lab rc=$?"
for f in engine lab; do echo "== $f"; grep -E "  void |Duration|Executed Instructions  |Issued Warp|DRAM Throughput|Warp Cycles Per Issued|L1/TEX Hit|L2 Hit|Achieved Active|Registers Per" $OUT/l/ncu_$f.log | head -14; done
cd $OUT && tar czf logs.tgz l && rm -rf l
