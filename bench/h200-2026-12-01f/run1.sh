#!/usr/bin/env bash
# session 20 call 1: early PDL triggers (DOTLM_GPU_PDL_EARLY: 1 = the small kernels trigger the next kernel
# before their wait, 3 = the GEMVs too): GPU tests and fixtures with them on, decode A/B at 512 in fp8 / bf16 / int8
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in fp8-block bf16 int8; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; done) &
for t in test_gpu_forward test_gpu_ops; do
  DOTLM_GPU_PDL_EARLY=3 timeout 200 /tmp/r/$t > $OUT/l/${t}_early3.log 2>&1; echo "$t early=3 rc=$?: $(tail -1 $OUT/l/${t}_early3.log)"
done
grep -iE "CHECK failed" $OUT/l/test_gpu_*.log | head -5
DOTLM_GPU_PDL_EARLY=3 DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda_early3.log 2>&1; echo "fixtures cuda early=3 rc=$?: $(tail -1 $OUT/l/fixtures_cuda_early3.log)"
wait
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $OUT/l/gpu_bench.log 2>&1; grep -m1 "copy D2D" $OUT/l/gpu_bench.log
A="off:;e1:DOTLM_GPU_PDL_EARLY=1;e3:DOTLM_GPU_PDL_EARLY=3"
for f in fp8-block bf16 int8; do KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "$A"; done
DOTLM_GPU_PDL_EARLY=3 /tmp/r/dotlm bench --model /dev/shm/q8b-bf16 --backend cuda --prompt-len 64 --gen 8 --stats > $OUT/l/stats_e3.log 2>&1; grep -E "pdl" $OUT/l/stats_e3.log | head
cd $OUT && tar czf logs.tgz l && rm -rf l
