#!/usr/bin/env bash
# session 25 call 5: main's final code, single-sequence decode (fp8 block,
# Qwen3-8B shapes) at 512 positions, twice, against the floor measured in
# the same call (no M = 1 kernel changed this session)
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
d=/dev/shm/q8b
timeout 150 python3 tools/make_bench_model.py $d --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; grep "copy D2D" $L/gpu_bench.log | head -1
for i in 1 2; do
  timeout 120 /tmp/r/dotlm bench --model $d --backend cuda --prompt-len 512 --gen 64 > $L/bench_$i.log 2>&1
  echo "run $i rc=$?"; grep -iE "decode|prompt|floor" $L/bench_$i.log | head -6
done
tar czf $OUT/logs.tgz -C $L .
