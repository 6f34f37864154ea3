#!/usr/bin/env bash
# session 28 call 4 (experiment build: DOTLM_I8_KSFILL): int8 W8A8 decode at
# 512 with the K split by shape (i8ks=0), unbounded and halved while its grid
# would take more than F% of the blocks that fit at once, against the default
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
B=/tmp/r; export LD_LIBRARY_PATH=$B/lib
timeout 200 python3 tools/make_bench_model.py /dev/shm/m_i8 --preset qwen3-8b --format int8 > $L/gen_i8.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_i8/
for i in 1 2; do
  for v in def ks f90 f75 f50; do
    case $v in def) e=X=1;; ks) e=DOTLM_GEMV=default,i8ks=0;; f*) e="DOTLM_GEMV=default,i8ks=0 DOTLM_I8_KSFILL=${v#f}";; esac
    env $e timeout 60 $B/dotlm bench --model /dev/shm/m_i8 --backend cuda --prompt-len 512 --gen 64 > $L/dec_i8_${v}_$i.log 2>&1
    echo "int8 decode $v $i: $(grep -E '^decode' $L/dec_i8_${v}_$i.log | tail -1) $(grep -h 'ksfill' $L/dec_i8_${v}_$i.log | sort -u | tr '\n' ' ')"
  done
done
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
