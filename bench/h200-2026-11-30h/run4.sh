#!/usr/bin/env bash
# session 14 call 4: the heads-per-block rule keeping the keys per batch: GPU tests, fixtures, decode
set -u
OUT=${OUT:-/tmp/out}; OUT0=$OUT; L=/tmp/logs; mkdir -p $OUT $L /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
for t in test_gpu_ops test_gpu_forward; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"
  grep -E "CHECK failed|FAIL" $L/$t.log | head -5
done
export OUT=$L
tools/dev_e2e_ab.sh fp8-block "new:;old:DOTLM_GPU_ATTN_GB=4 DOTLM_DISABLE=cuda.attention.combine_rt,cuda.attention.idx_prewait;attn:DOTLM_GPU_DIAG_SKIP=attn;all:DOTLM_GPU_DIAG_SKIP=norm,qkrope,attn,silu,matmul" "new:;old:DOTLM_GPU_ATTN_GB=4 DOTLM_DISABLE=cuda.attention.combine_rt,cuda.attention.idx_prewait"
tools/dev_e2e_ab.sh int8 "new:" "new:"
tools/dev_e2e_ab.sh bf16 "new:" "new:"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 170 python3 tests/py/test_fixtures.py > $L/fixtures_cuda.log 2>&1; echo "fixtures rc=$?: $(tail -1 $L/fixtures_cuda.log)"
tar czf ${OUT0}/logs.tgz -C $L .
