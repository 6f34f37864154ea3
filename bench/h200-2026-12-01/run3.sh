#!/usr/bin/env bash
# session 15 call 3: split_heads switch/counter + matmul:NxK diag: GPU tests, per-GEMV in-step costs, opt-in A/B
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for t in test_gpu_ops test_gpu_forward; do
  timeout 200 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -i "FAIL" $OUT/l/test_gpu_ops.log | head -5
S="mqkv:DOTLM_GPU_DIAG_SKIP=matmul:6144x4096;mo:DOTLM_GPU_DIAG_SKIP=matmul:4096x4096;mgu:DOTLM_GPU_DIAG_SKIP=matmul:24576x4096;mdown:DOTLM_GPU_DIAG_SKIP=matmul:4096x12288;mlm:DOTLM_GPU_DIAG_SKIP=matmul:151936x4096"
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "base:;shoff:DOTLM_DISABLE=cuda.attention.split_heads;fuse:DOTLM_GPU_ATTN_FUSE=1;qk:DOTLM_GPU_ATTN_QK=1;$S" "base:;shoff:DOTLM_DISABLE=cuda.attention.split_heads;fuse:DOTLM_GPU_ATTN_FUSE=1"
d=/dev/shm/q8b-fp8-block
for e in "" "DOTLM_DISABLE=cuda.attention.split_heads"; do
  env $e /tmp/r/dotlm bench --model $d --backend cuda --prompt-len 512 --gen 16 --stats > $OUT/l/stats_${e:+off}.log 2>&1
  echo "stats [$e]: $(grep -E 'split_heads|attention.split ' $OUT/l/stats_${e:+off}.log | tr -s ' ' | tr '\n' ';')"
done; rm -rf $d
OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "base:;loop2:DOTLM_GEMV=default,loop=2;fuse:DOTLM_GPU_ATTN_FUSE=1;qk:DOTLM_GPU_ATTN_QK=1;$S"
OUT=$OUT/l tools/dev_e2e_ab.sh int8 "base:;fuse:DOTLM_GPU_ATTN_FUSE=1;qk:DOTLM_GPU_ATTN_QK=1;$S"
cd $OUT && tar czf logs.tgz l && rm -rf l
