#!/usr/bin/env bash
# session 31 call 4: ws with the producer throttled to q copies in flight and the attention K/V kept in L2
set -u
OUT=${OUT:-/tmp/out}; L=/tmp/dv_l; mkdir -p $L
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv > $L/gpu.txt 2>&1
nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -o /tmp/plab bench/lab/persist_lab.cu > $L/lab_build.log 2>&1 || { echo "lab build failed"; tail -20 $L/lab_build.log; }

for i in 1 2; do
  timeout 120 /tmp/plab 36 20 > $L/lab36_$i.log 2>&1; echo "lab 36 layers ($i) rc=$?"
done
grep -v "^| persist" $L/lab36_1.log
grep "^| ws\|^| pdl\|^| plain" $L/lab36_2.log
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
