#!/usr/bin/env bash
# session 17 call 1: main at the start (cffc180): where a decode step's time goes now, bf16 and fp8 at 512
# (DOTLM_GPU_DIAG_SKIP groups left out; every output is then wrong: timing only)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem --format=csv > $OUT/l/gpu.txt 2>&1
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen8.log 2>&1; echo "gen fp8 rc=$?") &
timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-bf16 --preset qwen3-8b --format bf16 > $OUT/l/gen16.log 2>&1; echo "gen bf16 rc=$?"
wait
V="base:;combine:DOTLM_GPU_DIAG_SKIP=combine;attn:DOTLM_GPU_DIAG_SKIP=attn,combine;qkrope:DOTLM_GPU_DIAG_SKIP=qkrope;norm:DOTLM_GPU_DIAG_SKIP=norm"
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "$V"
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "$V"
cd $OUT && tar czf logs.tgz l && rm -rf l
