#!/usr/bin/env bash
# The W8A8 AVX-512 VNNI tiles' last M mod 4 rows through a 1..3-row tile
# (before: a 4-row tile with the last row repeated) against the build before
# it (OLD=<dotlm of 3659ca8>; the int8 code is the same from there to
# 8368820), interleaved: GEMV GB/s of weight bytes at M = 4..8 and 13,
# 1 and 2 threads.
cd "$(dirname "$0")/../.."
NEW=${NEW:-./build/dotlm}
OLD=${OLD:?set OLD to a dotlm built at 3659ca8}
for round in 1 2; do
  for b in new old; do
    D=$NEW; [ $b = old ] && D=$OLD
    for t in 1 2; do
      echo "== round $round, $b, $t thread(s)"
      $D bench --shape 4096x4096 -t $t --reps 10 --gemv-m 4,5,6,7 2>&1 | grep -E '^(format|int8)'
      $D bench --shape 4096x4096 -t $t --reps 10 --gemv-m 8,13,2,1 2>&1 | grep -E '^(format|int8)'
    done
  done
done
