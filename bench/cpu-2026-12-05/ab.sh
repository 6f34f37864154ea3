#!/usr/bin/env bash
# A/B of the W8A8 GEMM tile changes (2026-12-05): OLD = a build of dce6ab5
# (the session's start), NEW = this tree's build. Interleaved runs of the
# kernel bench (4096x4096, 2 and 1 threads) and of the W8A8 prompt of a
# Qwen2.5-0.5B-shaped random checkpoint (tools/make_bench_model.py --preset
# qwen2.5-0.5b --format int8 /tmp/q05_int8).
# Usage: OLD=/tmp/oldtree/build/dotlm NEW=build/dotlm bench/cpu-2026-12-05/ab.sh
set -u
OLD=${OLD:?build of dce6ab5} NEW=${NEW:-build/dotlm} MODEL=${MODEL:-/tmp/q05_int8}
for r in 1 2; do  # each run: OLD then NEW
  for b in "$OLD" "$NEW"; do
    echo "== $b, run $r, 2 threads"; $b bench --shape 4096x4096 --reps 16 2>&1 | grep -E "bandwidth|peaks|GF/s|int8|fp8-block |bf16"
    echo "== $b, run $r, 1 thread"; $b bench --shape 4096x4096 --reps 16 -t 1 2>&1 | grep -E "int8"
    echo "== $b, run $r, model"; $b bench --model "$MODEL" --prompt-len 512 --gen 16 2>&1 | grep -E "prompt:|decode:"
    echo "== $b, run $r, model, 1 thread"; $b bench --model "$MODEL" --prompt-len 512 --gen 16 -t 1 2>&1 | grep -E "prompt:"
  done
done
