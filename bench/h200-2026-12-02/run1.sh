#!/usr/bin/env bash
# session 24 call 1: the persistent decode lab (bench/lab/persist_lab.cu),
# then the attention helper refactor (dl_kv_row / dl_attn_qvec /
# dl_attn_seq_first) checked by test_gpu_ops, test_gpu_forward and the
# fixtures on cuda
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv > $L/gpu.txt 2>&1
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/plab bench/lab/persist_lab.cu > $L/lab_build.log 2>&1 || { echo "lab build failed"; cat $L/lab_build.log; }
timeout 60 /tmp/plab 2 3 > $L/lab_small.log 2>&1; echo "lab small rc=$?"; cat $L/lab_small.log
timeout 150 /tmp/plab 36 20 > $L/lab36.log 2>&1; echo "lab 36 rc=$?"; cat $L/lab36.log
echo "t=$(( $(date +%s) - t0 ))s"
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
for t in test_gpu_ops test_gpu_forward; do
  timeout 150 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"; grep FAIL $L/$t.log | head -5
done
echo "t=$(( $(date +%s) - t0 ))s"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures.log)"; grep -E "FAIL" $L/fixtures.log | head
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
