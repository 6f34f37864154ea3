#!/usr/bin/env bash
# session 38 call 2: gemv_lab SET 3 (k_rs: the engine's M = 1 ring with S
# stages and chunk c + 1's x in a second register set) on every shape,
# then ncu on 5120x17408 for the two-stage ring without / with the prefetch.
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $L/gpu.txt
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/gemv_lab bench/lab/gemv_lab.cu > $L/build.log 2>&1; echo "build rc=$?"
timeout 200 /tmp/gemv_lab 40 -1 3 > $L/lab_set3.log 2>&1; echo "lab3 rc=$?"
timeout 200 /tmp/gemv_lab 40 -1 2 > $L/lab_set2.log 2>&1; echo "lab2 rc=$?"
SEC="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats"
for k in _Z4k_rsILi4ELi2ELi0ELi2ELi128ELi8E _Z4k_rsILi4ELi2ELi1ELi2ELi128ELi8E; do
  timeout 90 ncu --clock-control none --kernel-name-base mangled -k regex:$k -c 1 $SEC /tmp/gemv_lab 2 0 3 > $L/ncu_$k.log 2>&1
  echo "ncu $k rc=$? $(grep -E 'Duration|Issued Warp Per|Eligible Warps|Active Warps Per Sch|No Eligible' $L/ncu_$k.log | awk '{print $NF}' | tr '\n' ' ')"
done
grep -E 'copy D2D|BITS' $L/lab_set3.log | head -5
sed -n '/^plain launches/,$p' $L/lab_set3.log
sed -n '/^with PDL/,/^$/p' $L/lab_set2.log | head -4
