#!/usr/bin/env bash
# session 18 call 6: main, the segment switch point between 512 and 1024: segments of 32 against 64 at 640 and 768
# positions (fp8 and bf16; the by-position rule uses 32 there), three rounds interleaved
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-bf16 --preset qwen3-8b --format bf16 > $OUT/l/gen_bf16.log 2>&1; echo "gen bf16 rc=$?") &
timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen_fp8.log 2>&1; echo "gen fp8 rc=$?"
for p in 640 768; do
  PLEN=$p KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "s32:DOTLM_GPU_ATTN_SEG=32;s64:DOTLM_GPU_ATTN_SEG=64;s32b:DOTLM_GPU_ATTN_SEG=32;s64b:DOTLM_GPU_ATTN_SEG=64"
done
wait
for p in 640 768; do
  PLEN=$p KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "s32:DOTLM_GPU_ATTN_SEG=32;s64:DOTLM_GPU_ATTN_SEG=64"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
