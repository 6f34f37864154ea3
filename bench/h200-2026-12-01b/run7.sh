#!/usr/bin/env bash
# session 16 calls 7-9: one build per call (V = old: main; new: this session), back to back on one warm machine:
# GEMV bench and decode every format (checkpoints generated once, kept in /dev/shm)
set -u
V=$1
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l; rm -rf /tmp/r; mkdir -p /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,uuid --format=csv,noheader
for f in fp8-block bf16 int8; do
  [ -f /dev/shm/q8b-$f/config.json ] || { timeout 250 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; }
done
timeout 120 /tmp/r/dotlm_gpu_bench --no-sweep > $OUT/l/bench_$V.log 2>&1; echo "bench $V rc=$?"
run() { # fmt plen
  timeout 120 /tmp/r/dotlm bench --model /dev/shm/q8b-$1 --backend cuda --prompt-len $2 --gen 64 > $OUT/l/e2e_$1_${V}_$2.log 2>&1
  echo "$1 $V P=$2 $(grep -E '^decode' $OUT/l/e2e_$1_${V}_$2.log | sed 's/decode: 64 tokens in //') | $(grep -E '^prompt' $OUT/l/e2e_$1_${V}_$2.log | sed 's/.*= //')"
}
for f in bf16 fp8-block int8; do run $f 512; run $f 512; run $f 4096; done
grep -E "^(bf16|fp8 block|int8 W8A8) .* 1  " $OUT/l/bench_$V.log; grep -E "copy D2D" $OUT/l/bench_$V.log; grep -E " 1 .*%" $OUT/l/bench_$V.log | grep -E "q/k/v|gate" | head -6
cd $OUT && tar czf logs.tgz l && rm -rf l
