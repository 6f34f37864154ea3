#!/usr/bin/env bash
# session 16 call 10: the final build's numeric sweep (fold is the e4m3 default now) and test_gpu_gdn
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
timeout 120 /tmp/r/dotlm_gpu_bench --no-bench > $OUT/l/sweep.log 2>&1; echo "sweep rc=$?: $(tail -1 $OUT/l/sweep.log)"
grep -iE "fail|fp8" $OUT/l/sweep.log | head -12
timeout 200 /tmp/r/test_gpu_gdn > $OUT/l/test_gpu_gdn.log 2>&1; echo "test_gpu_gdn rc=$?: $(tail -1 $OUT/l/test_gpu_gdn.log)"
cd $OUT && tar czf logs.tgz l && rm -rf l
