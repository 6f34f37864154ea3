#!/usr/bin/env bash
# session 15 call 1: per-kernel isolated durations of decode steps (ncu, eager), every format
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
which ncu; ncu --version | tail -1
for fmt in int8 fp8-block bf16; do
  d=/dev/shm/q8b-$fmt
  timeout 150 python3 tools/make_bench_model.py "$d" --preset qwen3-8b --format "$fmt" > /dev/null 2>&1 || { echo "gen $fmt failed"; continue; }
  timeout 60 /tmp/r/dotlm bench --model $d --backend cuda --prompt-len 512 --gen 64 > $OUT/l/e2e_$fmt.log 2>&1
  echo "$fmt graph: $(grep -E '^decode' $OUT/l/e2e_$fmt.log)"
  DOTLM_DISABLE=cuda.graph timeout 60 /tmp/r/dotlm bench --model $d --backend cuda --prompt-len 512 --gen 64 > $OUT/l/e2e_${fmt}_eager.log 2>&1
  echo "$fmt eager: $(grep -E '^decode' $OUT/l/e2e_${fmt}_eager.log)"
  DOTLM_DISABLE=cuda.graph timeout 240 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum \
     --launch-skip 2500 --launch-count 700 --csv /tmp/r/dotlm bench --model $d --backend cuda --prompt-len 512 --gen 16 \
     > $OUT/l/ncu_$fmt.csv 2> $OUT/l/ncu_$fmt.err
  echo "$fmt ncu rc=$? lines=$(wc -l < $OUT/l/ncu_$fmt.csv)"
  rm -rf $d
done
cd $OUT && tar czf logs.tgz l && rm -rf l
