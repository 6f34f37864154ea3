#!/usr/bin/env bash
# session 24 call 2: the persistent decode lab again, with its GEMV-only
# forms (norms, codes and attention left out) and the h codes loaded 16 at
# a time; two runs of 36 layers
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv > $L/gpu.txt 2>&1
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/plab bench/lab/persist_lab.cu > $L/lab_build.log 2>&1 || { echo "lab build failed"; cat $L/lab_build.log; }
timeout 60 /tmp/plab 2 3 > $L/lab_small.log 2>&1; echo "lab small rc=$?"; tail -12 $L/lab_small.log
for i in 1 2; do timeout 150 /tmp/plab 36 20 > $L/lab36_$i.log 2>&1; echo "lab 36 rc=$?"; cat $L/lab36_$i.log; done
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
