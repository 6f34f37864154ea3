#!/usr/bin/env bash
# The AVX-512VL batched-decode tile at M = 2, 3 (M x 8 spread weight rows)
# against the AVX2 1x4 decode tile it replaces there
# (DOTLM_DISABLE='cpu.matmul.*.avx512vl.batch'), interleaved, 1 and 2
# threads: GEMV GB/s of weight bytes at 4096x4096 (columns M = 2, 3, 2, 3).
cd "$(dirname "$0")/../.."
D=${D:-./build/dotlm}
for round in 1 2; do
  for sw in on off; do
    if [ $sw = off ]; then export DOTLM_DISABLE='cpu.matmul.*.avx512vl.batch'; else unset DOTLM_DISABLE; fi
    for t in 1 2; do
      echo "== round $round, batch tile $sw, $t thread(s)"
      $D bench --shape 4096x4096 -t $t --reps 20 --gemv-m 2,3,2,3 2>&1 | grep -E '^(memory|format|bf16|f16|f32) '
    done
  done
done
