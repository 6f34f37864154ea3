#!/usr/bin/env bash
# session 20 call 6: experiment DOTLM_GEMV_NOSCALE=1: the 16/32-bit register GEMV at M <= 2 without a block-scale
# load per chunk (s = 1 at compile time; fma(p, 1, acc) = acc + p): logits bitwise against the default at M = 1
# and 2, bf16 decode A/B at 512
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-bf16 --preset qwen3-8b --format bf16 > $OUT/l/gen_bf16.log 2>&1
for t in 7 7,11; do for e in 0 1; do
  DOTLM_GEMV_NOSCALE=$e timeout 60 /tmp/r/dotlm logits /dev/shm/q8b-bf16 --tokens $t --backend cuda --out /tmp/lg_${e}_${t/,/_}.npy > $OUT/l/logits_${e}_${t/,/_}.log 2>&1
done; echo "tokens $t: $(md5sum /tmp/lg_0_${t/,/_}.npy | cut -c1-12) default, $(md5sum /tmp/lg_1_${t/,/_}.npy | cut -c1-12) noscale"; done
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -m1 "copy D2D" $OUT/l/gpu_bench.log
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "off:;nos:DOTLM_GEMV_NOSCALE=1;off2:;nos2:DOTLM_GEMV_NOSCALE=1"
cd $OUT && tar czf logs.tgz l && rm -rf l
