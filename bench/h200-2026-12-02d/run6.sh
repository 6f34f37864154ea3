#!/usr/bin/env bash
# session 27 call 6: after the review's mend (one dl_k_xperm launcher, one
# K condition for the permuted reads, twin bytes = xperm bytes at M = 1):
# the GPU tests that cover those paths, and fp8 decode once
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
B=/tmp/r; export LD_LIBRARY_PATH=$B/lib
(timeout 200 python3 tools/make_bench_model.py /dev/shm/m_f8 --preset qwen3-8b --format fp8-block > $L/gen_f8.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_f8/) &
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward; do
  timeout 200 $B/$t > $L/$t.log 2>&1; echo "$t rc=$? $(tail -1 $L/$t.log)"
done
wait
timeout 60 $B/dotlm bench --model /dev/shm/m_f8 --backend cuda --prompt-len 512 --gen 64 > $L/dec.log 2>&1
echo "decode: $(grep -E '^decode' $L/dec.log | tail -1)"
tar czf $OUT/logs.tgz -C $L .
