#!/usr/bin/env bash
# session 14 call 5: the split kernel's K/V prefetch (cuda.attention.kv_prefetch): GPU tests, fixtures, A/B decode
set -u
OUT=${OUT:-/tmp/out}; OUT0=$OUT; L=/tmp/logs; mkdir -p $OUT $L /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
for t in test_gpu_ops test_gpu_forward; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"
  grep -E "CHECK failed|FAIL" $L/$t.log | head -5
done
export OUT=$L
tools/dev_e2e_ab.sh fp8-block "pf:;nopf:DOTLM_DISABLE=cuda.attention.kv_prefetch" "pf:;nopf:DOTLM_DISABLE=cuda.attention.kv_prefetch"
tools/dev_e2e_ab.sh bf16 "pf:;nopf:DOTLM_DISABLE=cuda.attention.kv_prefetch" "pf:;nopf:DOTLM_DISABLE=cuda.attention.kv_prefetch"
tools/dev_e2e_ab.sh int8 "pf:;nopf:DOTLM_DISABLE=cuda.attention.kv_prefetch" "pf:;nopf:DOTLM_DISABLE=cuda.attention.kv_prefetch"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 170 python3 tests/py/test_fixtures.py > $L/fixtures_cuda.log 2>&1; echo "fixtures rc=$?: $(tail -1 $L/fixtures_cuda.log)"
tar czf ${OUT0}/logs.tgz -C $L .
