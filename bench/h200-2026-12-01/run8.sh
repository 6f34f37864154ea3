#!/usr/bin/env bash
# session 15 call 7: one W8A8 scale / code-packing helper in every quantizing kernel: the bitwise tests
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
for t in test_gpu_forward test_gpu_ops; do
  timeout 150 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -i "CHECK failed" $OUT/l/test_gpu_*.log | head -5
cd $OUT && tar czf logs.tgz l && rm -rf l
