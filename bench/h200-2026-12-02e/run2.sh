#!/usr/bin/env bash
# session 28 call 2 (run1's binaries): int8 W8A8 decode at 512 with the
# W8A8 GEMV's K split by shape (DOTLM_GEMV=default,i8ks=0: the kernel alone
# gained 18 points on 5120x17408 in run1) against the default, interleaved,
# whole step and GEMVs alone (DOTLM_GPU_DIAG_SKIP); fp8 with the late PDL
# trigger for every GEMV
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
B=/tmp/r; export LD_LIBRARY_PATH=$B/lib
[ -d /dev/shm/m_f8 ] || (timeout 200 python3 tools/make_bench_model.py /dev/shm/m_f8 --preset qwen3-8b --format fp8-block > $L/gen_f8.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_f8/)
timeout 200 python3 tools/make_bench_model.py /dev/shm/m_i8 --preset qwen3-8b --format int8 > $L/gen_i8.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_i8/
echo "t=$(( $(date +%s) - t0 ))s"
SK=norm,qkrope,attn,combine,silu,actq
for i in 1 2; do
  for v in def ks; do
    case $v in def) e=X=1;; ks) e=DOTLM_GEMV=default,i8ks=0;; esac
    env $e timeout 60 $B/dotlm bench --model /dev/shm/m_i8 --backend cuda --prompt-len 512 --gen 64 > $L/dec_i8_${v}_$i.log 2>&1
    echo "int8 decode $v $i: $(grep -E '^decode' $L/dec_i8_${v}_$i.log | tail -1)"
    env $e DOTLM_GPU_DIAG_SKIP=$SK timeout 60 $B/dotlm bench --model /dev/shm/m_i8 --backend cuda --prompt-len 512 --gen 64 > $L/dec_i8_${v}_gemvs_$i.log 2>&1
    echo "int8 GEMVs alone $v $i: $(grep -E '^decode' $L/dec_i8_${v}_gemvs_$i.log | tail -1)"
  done
done
for i in 1 2; do
  for v in def late; do
    case $v in def) e=X=1;; late) e=DOTLM_GEMV_TRIG=late;; esac
    env $e timeout 60 $B/dotlm bench --model /dev/shm/m_f8 --backend cuda --prompt-len 512 --gen 64 > $L/dec_f8_${v}_$i.log 2>&1
    echo "fp8 decode $v $i: $(grep -E '^decode' $L/dec_f8_${v}_$i.log | tail -1)"
  done
done
DOTLM_GEMV=default,i8ks=0 timeout 60 $B/dotlm bench --model /dev/shm/m_i8 --backend cuda --prompt-len 512 --gen 16 --stats > $L/dec_i8_counters.log 2>&1
grep -E "int8_gemv_ksplit|int8.gemv " $L/dec_i8_counters.log | head -4
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
