#!/usr/bin/env bash
# session 14 call 3: heads per split block by rule, one-round-trip combine, indices before the wait:
# GPU tests, fixtures on cuda, A/B decode, all formats at 512 / 4096. Logs tarred (one file back).
set -u
OUT=${OUT:-/tmp/out}; OUT0=$OUT; L=/tmp/logs; mkdir -p $OUT $L /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
for t in test_gpu_ops test_gpu_forward test_gpu_gdn; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"
  grep -E "CHECK failed|FAIL" $L/$t.log | head -5
done
export OUT=$L
tools/dev_e2e_ab.sh fp8-block "new:;gb4:DOTLM_GPU_ATTN_GB=4;nort:DOTLM_DISABLE=cuda.attention.combine_rt;old:DOTLM_GPU_ATTN_GB=4 DOTLM_DISABLE=cuda.attention.combine_rt,cuda.attention.idx_prewait;attn:DOTLM_GPU_DIAG_SKIP=attn" "new:;gb4:DOTLM_GPU_ATTN_GB=4;nort:DOTLM_DISABLE=cuda.attention.combine_rt;old:DOTLM_GPU_ATTN_GB=4 DOTLM_DISABLE=cuda.attention.combine_rt,cuda.attention.idx_prewait;attn:DOTLM_GPU_DIAG_SKIP=attn"
tools/dev_e2e_ab.sh int8 "new:;old:DOTLM_GPU_ATTN_GB=4 DOTLM_DISABLE=cuda.attention.combine_rt,cuda.attention.idx_prewait" "new:;old:DOTLM_GPU_ATTN_GB=4 DOTLM_DISABLE=cuda.attention.combine_rt,cuda.attention.idx_prewait"
tools/dev_e2e_ab.sh bf16 "new:;old:DOTLM_GPU_ATTN_GB=4 DOTLM_DISABLE=cuda.attention.combine_rt,cuda.attention.idx_prewait" "new:;old:DOTLM_GPU_ATTN_GB=4 DOTLM_DISABLE=cuda.attention.combine_rt,cuda.attention.idx_prewait"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 170 python3 tests/py/test_fixtures.py > $L/fixtures_cuda.log 2>&1; echo "fixtures rc=$?: $(tail -2 $L/fixtures_cuda.log | tr '\n' ' ')"
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_quick.log 2>&1; grep -i -m3 "copy" $L/gpu_bench_quick.log
tar czf ${OUT0}/logs.tgz -C $L .
