#!/usr/bin/env bash
# session 21 call 7: what the per-step logits copy to the host costs (bench/lab/d2h_lab.cu): pageable (today),
# pinned, pinned staging + host memcpy
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
nvcc -O3 -o /tmp/d2h bench/lab/d2h_lab.cu && /tmp/d2h | tee $L/d2h.txt && /tmp/d2h | tee -a $L/d2h.txt
tar czf $OUT/logs.tgz -C $L .
