#!/usr/bin/env bash
# session 17 call 3: where the split attention's time goes (DIAG attnwork: launched, no work), and the
# shared-memory carveout experiment (DOTLM_GPU_CARVEOUT: one L1/shared split for every kernel), bf16 + fp8;
# test_gpu_ops with the cluster checks mended
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in bf16 fp8-block; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
timeout 200 /tmp/r/test_gpu_ops > $OUT/l/test_gpu_ops.log 2>&1; echo "test_gpu_ops rc=$?: $(tail -1 $OUT/l/test_gpu_ops.log)"
grep -iE "CHECK failed|cluster merge" $OUT/l/test_gpu_ops.log | head -8
wait
V="base:;work:DOTLM_GPU_DIAG_SKIP=attnwork;attn:DOTLM_GPU_DIAG_SKIP=attn,combine;cv100:DOTLM_GPU_CARVEOUT=100;cv50:DOTLM_GPU_CARVEOUT=50;nopdl:DOTLM_DISABLE=cuda.pdl"
for f in bf16 fp8-block; do
  KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "$V"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
