#!/usr/bin/env bash
# session 19 call 6 (the run4 build: main's kernels): the opt-in q/k norm + RoPE + KV write in the decode
# attention's prologue (DOTLM_GPU_ATTN_QK=1, no qk_rope_kv launch) re-measured with today's attention (segments of
# 32 below 640, heads-per-block rule), bf16 and fp8 at 512 and 4096
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen_fp8.log 2>&1) &
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "base:;qk:DOTLM_GPU_ATTN_QK=1;base2:;qk2:DOTLM_GPU_ATTN_QK=1" "base:;qk:DOTLM_GPU_ATTN_QK=1"
wait
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "base:;qk:DOTLM_GPU_ATTN_QK=1" "base:;qk:DOTLM_GPU_ATTN_QK=1"
cd $OUT && tar czf logs.tgz l && rm -rf l
