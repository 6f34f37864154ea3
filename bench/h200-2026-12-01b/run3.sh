#!/usr/bin/env bash
# session 16 call 3: the lab's ring with x and the chunk scale through the ring too (k_cpx), every decode shape
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/lab bench/lab/gemv_lab.cu > $OUT/l/lab_build.log 2>&1; echo "lab build rc=$?"
timeout 300 /tmp/lab 40 > $OUT/l/lab.log 2>&1; echo "lab rc=$?"
grep -E "BITS|launch.*failed" $OUT/l/lab.log | head -5
for m in "plain launches" "with PDL" "PDL, late trigger"; do grep -A22 "^$m" $OUT/l/lab.log | grep -E "^($m|cpa R4 S2 KS2|cpx|reg R4 U2 KS1 wpb4 |cpah R4 S2 KS2)"; done
cd $OUT && tar czf logs.tgz l && rm -rf l
