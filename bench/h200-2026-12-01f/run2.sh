#!/usr/bin/env bash
# session 20 call 2: the 16-bit GEMV through a deep shared-memory ring at M = 1 (DOTLM_GEMV=ring16=S: S - 1
# chunks requested before the PDL wait), alone and with the small kernels' early trigger (DOTLM_GPU_PDL_EARLY=1):
# test_gpu_gemv_multi (every variant bitwise v1, ring16 rotated), test_gpu_forward with both on, bf16 decode A/B
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-bf16 --preset qwen3-8b --format bf16 > $OUT/l/gen_bf16.log 2>&1) &
timeout 240 /tmp/r/test_gpu_gemv_multi > $OUT/l/test_gpu_gemv_multi.log 2>&1; echo "test_gpu_gemv_multi rc=$?: $(tail -1 $OUT/l/test_gpu_gemv_multi.log)"
DOTLM_GEMV=ring16=5 DOTLM_GPU_PDL_EARLY=1 timeout 200 /tmp/r/test_gpu_forward > $OUT/l/test_gpu_forward_r5e1.log 2>&1; echo "test_gpu_forward ring16=5 early=1 rc=$?: $(tail -1 $OUT/l/test_gpu_forward_r5e1.log)"
grep -iE "CHECK failed|FAIL" $OUT/l/test_gpu_*.log | head -5
wait
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -m1 "copy D2D" $OUT/l/gpu_bench.log
A="off:;r3:DOTLM_GEMV=ring16=3;r5:DOTLM_GEMV=ring16=5;e1:DOTLM_GPU_PDL_EARLY=1;e1r5:DOTLM_GPU_PDL_EARLY=1 DOTLM_GEMV=ring16=5;e1r8:DOTLM_GPU_PDL_EARLY=1 DOTLM_GEMV=ring16=8"
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "$A"
DOTLM_GEMV=ring16=5 /tmp/r/dotlm bench --model /dev/shm/q8b-bf16 --backend cuda --prompt-len 64 --gen 8 --stats > $OUT/l/stats_r5.log 2>&1; grep -E "gemv_ring|pdl" $OUT/l/stats_r5.log | head
cd $OUT && tar czf logs.tgz l && rm -rf l
