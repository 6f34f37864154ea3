#!/usr/bin/env bash
# session 31 call 2: the lab again with streaming diagnostics of the ws ring
# form (a producer warp streaming every weight tile of the step through a
# bulk-copy ring, independent of the activations) and the split attention,
# 2 layers (sanity) then 36 layers twice
set -u
OUT=${OUT:-/tmp/out}; L=/tmp/dv_l; mkdir -p $L
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv > $L/gpu.txt 2>&1
nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -o /tmp/plab bench/lab/persist_lab.cu > $L/lab_build.log 2>&1 || { echo "lab build failed"; tail -20 $L/lab_build.log; }

for i in 1 2; do
  timeout 120 /tmp/plab 36 20 > $L/lab36_$i.log 2>&1; echo "lab 36 layers ($i) rc=$?"
done
cat $L/lab36_1.log
grep "^| ws\|^| pdl\|^| plain" $L/lab36_2.log
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
