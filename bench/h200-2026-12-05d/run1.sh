#!/usr/bin/env bash
# session 38 call 1: gemv_lab SET 2 (the engine's M = 1 fp8 ring, fold
# widening, twin x, 64 registers) against two ways of hiding its x loads:
# chunk c + 1's x in registers during chunk c (k_r2 xpf1), and x through
# shared memory per block (k_xs); then ncu on 5120x17408 for each.
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $L/gpu.txt
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/gemv_lab bench/lab/gemv_lab.cu > $L/build.log 2>&1; echo "build rc=$?"
timeout 240 /tmp/gemv_lab 40 -1 2 > $L/lab_set2.log 2>&1; echo "lab rc=$?"
SEC="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats"
for k in _Z4k_r2ILi4ELi2ELi0ELi128ELi8E _Z4k_r2ILi4ELi2ELi1ELi128ELi8E _Z4k_xsILi4ELi2ELi128ELi8E; do
  timeout 90 ncu --clock-control none --kernel-name-base mangled -k regex:$k -c 1 $SEC /tmp/gemv_lab 2 0 2 > $L/ncu_$k.log 2>&1
  echo "ncu $k rc=$? $(grep -E 'Duration|Issued Warp Per|Eligible Warps|Active Warps Per Sch|No Eligible' $L/ncu_$k.log | awk '{print $NF}' | tr '\n' ' ')"
done
sed -n '/^plain launches/,$p' $L/lab_set2.log
