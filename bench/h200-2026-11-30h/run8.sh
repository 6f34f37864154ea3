#!/usr/bin/env bash
# session 14 call 8: review mends (gm from the slot helper, diag list without a length cap): GPU tests, fp8 decode
set -u
OUT=${OUT:-/tmp/out}; OUT0=$OUT; L=/tmp/logs; mkdir -p $OUT $L /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
for t in test_gpu_ops test_gpu_forward; do
  timeout 120 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"
  grep -E "CHECK failed|FAIL" $L/$t.log | head -5
done
export OUT=$L
tools/dev_e2e_ab.sh fp8-block "new:" "new:"
tar czf ${OUT0}/logs.tgz -C $L .
