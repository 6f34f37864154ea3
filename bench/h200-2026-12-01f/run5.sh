#!/usr/bin/env bash
# session 20 call 5 (the run1 build again: early triggers as an opt-in): the small kernels' early trigger
# (DOTLM_GPU_PDL_EARLY=1) with the split attention loading its K/V rows before its wait (DOTLM_GPU_ATTN_WARM=1):
# with both, the attention blocks launch while the q/k/v GEMV still streams; fp8 / bf16 / int8 decode A/B at 512
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in fp8-block bf16 int8; do [ -f /dev/shm/q8b-$f/config.json ] || timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; done) &
DOTLM_GPU_PDL_EARLY=1 DOTLM_GPU_ATTN_WARM=1 timeout 200 /tmp/r/test_gpu_forward > $OUT/l/test_gpu_forward_e1w.log 2>&1; echo "test_gpu_forward early=1 warm=1 rc=$?: $(tail -1 $OUT/l/test_gpu_forward_e1w.log)"
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -m1 "copy D2D" $OUT/l/gpu_bench.log
wait
A="off:;e1:DOTLM_GPU_PDL_EARLY=1;w:DOTLM_GPU_ATTN_WARM=1;e1w:DOTLM_GPU_PDL_EARLY=1 DOTLM_GPU_ATTN_WARM=1"
for f in bf16 fp8-block int8; do KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "$A"; done
cd $OUT && tar czf logs.tgz l && rm -rf l
