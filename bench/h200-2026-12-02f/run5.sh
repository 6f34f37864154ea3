#!/usr/bin/env bash
# session 29 call 5: the chain lab with decode attention: what the engine's
# split + combine shape costs in a PDL graph against one kernel whose block
# takes a query head's whole row (no combine)
. bench/lib/device_prelude.sh
mkdir -p $L
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/chain_lab bench/lab/chain_lab.cu > $L/nvcc.log 2>&1 || { cat $L/nvcc.log; exit 1; }
timeout 300 /tmp/chain_lab 200 > $L/chain_lab.log 2>&1; echo "chain_lab rc=$?"
dv_finish
cat $L/chain_lab.log
