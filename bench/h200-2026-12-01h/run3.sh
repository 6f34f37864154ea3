#!/usr/bin/env bash
# session 22 call 3: main (56b82b2) as it stands, the end-to-end table: decode after 512 (twice) and after
# 4096, prompt tok/s at 512 and 4096, bf16 / fp8 block / int8 W8A8 Qwen3-8B shapes; and at 4096 (fp8) what
# the decode attention costs in place (DOTLM_GPU_DIAG_SKIP=attn, =combine); the attention's opt-in forms
# re-measured at 512 (fp8)
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
timeout 40 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/copy.log 2>&1; grep -m1 "copy D2D" $L/copy.log
OUT=$L tools/dev_e2e_ab.sh fp8-block "main:;warm:DOTLM_GPU_ATTN_WARM=1;qk:DOTLM_GPU_ATTN_QK=1;fuse:DOTLM_GPU_ATTN_FUSE=1;cl:DOTLM_GPU_ATTN_CL=1" "main:;noattn:DOTLM_GPU_DIAG_SKIP=attn;nocomb:DOTLM_GPU_DIAG_SKIP=combine"
echo "t=$(( $(date +%s) - t0 ))s"
OUT=$L tools/dev_e2e_ab.sh int8 "main:" "main:"
echo "t=$(( $(date +%s) - t0 ))s"
[ $(( $(date +%s) - t0 )) -lt 330 ] && OUT=$L tools/dev_e2e_ab.sh bf16 "main:" "main:"
echo "t=$(( $(date +%s) - t0 ))s"
grep -h "floor\|streamed" $L/e2e_*main_512.log | sort -u | head -6
tar czf $OUT/logs.tgz -C $L .
