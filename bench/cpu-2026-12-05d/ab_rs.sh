#!/usr/bin/env bash
# The W8A8 AVX-512 VNNI tiles with the row sums made at load
# (cpu.qmm.int8.rowsum_pre) against the per-panel sum pass (switched off),
# interleaved, two rounds: GEMV GB/s of weight bytes on 4096x4096 at
# M = 4..8 and 13, 16, 1 and 2 threads.
cd "$(dirname "$0")/../.."
D=${D:-./build/dotlm}
for round in 1 2; do
  for s in on off; do
    E=; [ $s = off ] && E=cpu.qmm.int8.rowsum_pre
    for t in 1 2; do
      echo "== round $round, row sums at load $s, $t thread(s)"
      DOTLM_DISABLE=$E $D bench --shape 4096x4096 -t $t --reps 10 --gemv-m 4,5,6,7 2>&1 | grep -E '^int8'
      DOTLM_DISABLE=$E $D bench --shape 4096x4096 -t $t --reps 10 --gemv-m 8,13,16,1 2>&1 | grep -E '^int8'
    done
  done
done
