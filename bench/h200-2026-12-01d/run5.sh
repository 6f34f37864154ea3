#!/usr/bin/env bash
# session 18 call 5: main, bf16 16-bit GEMV launch shapes in place: 4 rows per warp at M = 1 (same bits), the K
# split's row bound at 4096 and 8192 (another summation order for the weights it unsplits); decode at 512,
# interleaved, three rounds
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-bf16 --preset qwen3-8b --format bf16 > $OUT/l/gen_bf16.log 2>&1; echo "gen bf16 rc=$?"
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "base:;r4:DOTLM_GEMV=default,r1=4;ks4k:DOTLM_GEMV_KSMAXN=4096;ks8k:DOTLM_GEMV_KSMAXN=8192;base2:;r4b:DOTLM_GEMV=default,r1=4" "base:;ks8k:DOTLM_GEMV_KSMAXN=8192"
cd $OUT && tar czf logs.tgz l && rm -rf l
