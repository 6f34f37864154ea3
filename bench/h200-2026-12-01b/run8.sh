#!/usr/bin/env bash
# session 16 call 8: fp8 widening in the ring: h2 (default) against fold (the 2^8 into the chunk scale) and h2x (into x)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,uuid --format=csv,noheader
(timeout 250 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen.log 2>&1; echo "gen rc=$?") &
DOTLM_GEMV_VARIANTS="default;default,fp8=fold;default,fp8=h2x" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep > $OUT/l/bench.log 2>&1; echo "bench rc=$?"
wait
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "h2:;fold:DOTLM_GEMV=default,fp8=fold;h2x:DOTLM_GEMV=default,fp8=h2x" "h2:;fold:DOTLM_GEMV=default,fp8=fold"
echo "== summary =="
grep -E "^fp8 block .* 1  " $OUT/l/bench.log; grep -E "copy D2D" $OUT/l/bench.log
cd $OUT && tar czf logs.tgz l && rm -rf l
