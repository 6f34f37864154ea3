#!/usr/bin/env bash
# session 21 call 3: the fp8 GEMV's K split forced (experiment DOTLM_GEMV_FP8KS=1|2|4; default: 2 warps per
# row group): the M = 1 GEMV alone and fp8 decode A/B at 512
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
[ -f /dev/shm/q8b-fp8-block/config.json ] || (timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1) &
for v in 2 1 4; do
  DOTLM_GEMV_FP8KS=$v DOTLM_GEMV_VARIANTS="default" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep > $L/gpu_bench_ks$v.log 2>&1
  echo "gpu_bench ks=$v rc=$? $(grep -m1 'copy D2D' $L/gpu_bench_ks$v.log)"
  grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gpu_bench_ks$v.log | sed "s/\$/ ks=$v/"
done
wait
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "ks2:;ks1:DOTLM_GEMV_FP8KS=1;ks4:DOTLM_GEMV_FP8KS=4"
tar czf $OUT/logs.tgz -C $L .
