#!/usr/bin/env bash
# session 29 call 4: the read lab's set 1: the W8A8 GEMV's dp4a arithmetic
# with its activation codes from global memory (i8g, as the engine) or from
# shared memory (i8s), beside the same reads alone (row)
. bench/lib/device_prelude.sh
mkdir -p $L
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/read_lab bench/lab/read_lab.cu > $L/nvcc.log 2>&1 || { cat $L/nvcc.log; exit 1; }
timeout 200 /tmp/read_lab 200 1 > $L/read_lab_set1.log 2>&1; echo "read_lab rc=$?"
dv_finish
cut -c1-200 $L/read_lab_set1.log
