#!/usr/bin/env bash
# session 14 call 2: attention indices before the wait (cuda.attention.idx_prewait) and heads per split block
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
for t in test_gpu_ops test_gpu_forward; do
  timeout 150 /tmp/r/$t > $OUT/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/$t.log)"
  grep -E "CHECK failed|FAIL" $OUT/$t.log | head -5
done
tools/dev_e2e_ab.sh fp8-block "base:;noipre:DOTLM_DISABLE=cuda.attention.idx_prewait;gb1:DOTLM_GPU_ATTN_GB=1;gb2:DOTLM_GPU_ATTN_GB=2;gb1attn:DOTLM_GPU_ATTN_GB=1 DOTLM_GPU_DIAG_SKIP=attn" "base:;noipre:DOTLM_DISABLE=cuda.attention.idx_prewait;gb1:DOTLM_GPU_ATTN_GB=1;gb2:DOTLM_GPU_ATTN_GB=2;gb1c:DOTLM_GPU_ATTN_GB=1 DOTLM_GPU_DIAG_SKIP=combine"
