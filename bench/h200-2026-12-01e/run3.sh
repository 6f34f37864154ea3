#!/usr/bin/env bash
# session 19 call 3 (the run1/run2 build, with the norm in the GEMV switched off everywhere, i.e. main's kernels):
# stale GEMV knobs re-measured in decode at 512: fp8 three-stage ring, fp8 K over 4 warps below 8192 rows;
# W8A8 K split by shape / over 2 warps, W8A8 ring
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
D=DOTLM_DISABLE=cuda.norm_gemv
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-int8 --preset qwen3-8b --format int8 > $OUT/l/gen_int8.log 2>&1) &
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "base:$D;ring2:$D DOTLM_GEMV=default,ring=2;ks4:$D DOTLM_GEMV_FP8KS4N=8192"
wait
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh int8 "base:$D;ksauto:$D DOTLM_GEMV=default,i8ks=0;ks2:$D DOTLM_GEMV=default,i8ks=2;i8ring:$D DOTLM_GEMV=default,i8ring=1"
cd $OUT && tar czf logs.tgz l && rm -rf l
