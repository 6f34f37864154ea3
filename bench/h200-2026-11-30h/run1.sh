#!/usr/bin/env bash
# session 14 call 1: the diag build: GPU tests (quick), then decode with groups of launches left out
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for t in test_gpu_ops test_gpu_forward; do
  timeout 150 /tmp/r/$t > $OUT/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/$t.log)"
done
tools/dev_e2e_ab.sh fp8-block "base:;norm:DOTLM_GPU_DIAG_SKIP=norm;qkrope:DOTLM_GPU_DIAG_SKIP=qkrope;attn:DOTLM_GPU_DIAG_SKIP=attn;comb:DOTLM_GPU_DIAG_SKIP=combine;small:DOTLM_GPU_DIAG_SKIP=norm,qkrope,attn;mm:DOTLM_GPU_DIAG_SKIP=matmul" "base:;attn:DOTLM_GPU_DIAG_SKIP=attn;comb:DOTLM_GPU_DIAG_SKIP=combine"
tools/dev_e2e_ab.sh bf16 "base:;small:DOTLM_GPU_DIAG_SKIP=norm,qkrope,attn;mm:DOTLM_GPU_DIAG_SKIP=matmul"
tools/dev_e2e_ab.sh int8 "base:;small:DOTLM_GPU_DIAG_SKIP=norm,qkrope,attn,silu;mm:DOTLM_GPU_DIAG_SKIP=matmul"
