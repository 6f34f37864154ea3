#!/usr/bin/env bash
# session 22 call 7: the key-lane decode attention with its K row (16 chunks) and 32 V slices per lane in
# flight at once, the K loads issued before the queries are staged (128 registers); test_gpu_ops, decode A/B against DOTLM_GPU_ATTN_KL=0 after 4096 and (forced on) after 2048, fp8
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
d=/dev/shm/q8b-fp8-block
(timeout 150 python3 tools/make_bench_model.py $d --preset qwen3-8b --format fp8-block > /dev/null 2>&1; echo "gen fp8 rc=$?") &
timeout 200 /tmp/r/test_gpu_ops > $L/test_gpu_ops.log 2>&1; echo "test_gpu_ops rc=$?: $(tail -1 $L/test_gpu_ops.log)"
grep -E "FAIL" $L/test_gpu_ops.log | head -5
wait
echo "t=$(( $(date +%s) - t0 ))s"
KEEP=1 OUT=$L PLEN=4096 tools/dev_e2e_ab.sh fp8-block "kl:;split:DOTLM_GPU_ATTN_KL=0"
KEEP=1 OUT=$L PLEN=2048 tools/dev_e2e_ab.sh fp8-block "kl:DOTLM_GPU_ATTN_KL_MIN=0;split:DOTLM_GPU_ATTN_KL=0"
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
