#!/usr/bin/env bash
# session 19 call 2: the norm in the GEMV prologue only for launches of <= 1024 blocks (fp8 q/k/v: 768 blocks)
# against the separate norm, fp8 decode at 512 (three interleaved pairs) and 4096
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "fused:;sep:DOTLM_DISABLE=cuda.norm_gemv;fused2:;sep2:DOTLM_DISABLE=cuda.norm_gemv" "fused:;sep:DOTLM_DISABLE=cuda.norm_gemv"
cd $OUT && tar czf logs.tgz l && rm -rf l
