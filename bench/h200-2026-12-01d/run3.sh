#!/usr/bin/env bash
# session 18 call 3: main (the qkv epilogue experiment reverted): the GEMV bench (quick); the opt-in decode
# attention forms re-measured under the segment-by-position rule (early K/V loads, cluster merge, fused combine)
# in three formats at 512, interleaved
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in fp8-block bf16 int8; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
timeout 120 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; echo "gpu bench rc=$?"; grep -E '^copy|[0-9]x[0-9]+ +1 ' $OUT/l/gpu_bench.log | head -12
wait
for f in fp8-block bf16 int8; do
  KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "base:;warm:DOTLM_GPU_ATTN_WARM=1;clu:DOTLM_GPU_ATTN_CL=1;fuse:DOTLM_GPU_ATTN_FUSE=1"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
