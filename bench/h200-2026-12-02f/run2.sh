#!/usr/bin/env bash
# session 29 call 2: the read lab again with the first loads held above the
# PDL wait (as the engine's GEMVs), and the chain lab (bench/lab/chain_lab.cu):
# what a dependent small kernel costs behind a GEMV in a PDL graph
. bench/lib/device_prelude.sh
mkdir -p $L
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
for x in read_lab chain_lab; do
  nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/$x bench/lab/$x.cu > $L/nvcc_$x.log 2>&1 || { cat $L/nvcc_$x.log; exit 1; }
done
timeout 200 /tmp/read_lab 200 > $L/read_lab.log 2>&1; echo "read_lab rc=$?"
timeout 200 /tmp/chain_lab 200 > $L/chain_lab.log 2>&1; echo "chain_lab rc=$?"
dv_finish
cut -c1-200 $L/read_lab.log
cat $L/chain_lab.log
