#!/usr/bin/env bash
# session 20 call 4: other launch shapes for the small float GEMVs only (q/k/v, o_proj: M = 1, <= 8192 rows,
# K <= 4096; experiment DOTLM_GEMV_SMALL=spec on top of the defaults; every shape bitwise the same): bf16 and
# fp8 decode A/B at 512
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen_fp8.log 2>&1) &
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -m1 "copy D2D" $OUT/l/gpu_bench.log
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "off:;r4:DOTLM_GEMV_SMALL=r1=4;u4:DOTLM_GEMV_SMALL=u=4;r1:DOTLM_GEMV_SMALL=r1=1;w8:DOTLM_GEMV_SMALL=wpb=8;r4w8:DOTLM_GEMV_SMALL=r1=4,wpb=8"
wait
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "off:;r2:DOTLM_GEMV_SMALL=r1=2;w8:DOTLM_GEMV_SMALL=wpb=8;r2w8:DOTLM_GEMV_SMALL=r1=2,wpb=8"
DOTLM_GEMV_SMALL=r1=4 DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda_small.log 2>&1; echo "fixtures cuda small r1=4 rc=$?: $(tail -1 $OUT/l/fixtures_cuda_small.log)"
cd $OUT && tar czf logs.tgz l && rm -rf l
