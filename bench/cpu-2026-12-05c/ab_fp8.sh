#!/usr/bin/env bash
# The AVX-512 fp8 register GEMV at M = 3..8 (up to four activation rows per
# widening; before: two, and the widened-panel tiles at M >= 6, or M >= 4
# without VBMI) against the build before it (OLD=<dotlm of 3659ca8>),
# interleaved: GEMV GB/s of weight bytes at M = 1..8, 1 and 2 threads, with
# the VBMI table widening and without it (DOTLM_DISABLE=cpu.qmm.fp8.avx512vbmi).
cd "$(dirname "$0")/../.."
NEW=${NEW:-./build/dotlm}
OLD=${OLD:?set OLD to a dotlm built at 3659ca8}
for round in 1 2; do
  for b in new old; do
    D=$NEW; [ $b = old ] && D=$OLD
    for dis in none cpu.qmm.fp8.avx512vbmi; do
      for t in 1 2; do
        echo "== round $round, $b, disable=$dis, $t thread(s)"
        DOTLM_DISABLE=$dis $D bench --shape 4096x4096 -t $t --reps 10 --gemv-m 4,5,6,7 2>&1 | grep -E '^(format|fp8)'
        DOTLM_DISABLE=$dis $D bench --shape 4096x4096 -t $t --reps 10 --gemv-m 8,3,2,1 2>&1 | grep -E '^(format|fp8)'
      done
    done
  done
done
