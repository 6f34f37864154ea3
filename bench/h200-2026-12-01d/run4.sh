#!/usr/bin/env bash
# session 18 call 4: main, launch knobs in place: the GEMVs' PDL trigger after the K loop (DOTLM_GEMV_TRIG=late)
# in fp8 and int8, the 16-bit GEMV with 8 warps per block or 4 vectors in flight in bf16; decode at 512,
# interleaved (four rounds for the trigger)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in bf16 int8; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen_fp8.log 2>&1; echo "gen fp8 rc=$?"
for f in fp8-block; do
  KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "base:;late:DOTLM_GEMV_TRIG=late;base2:;late2:DOTLM_GEMV_TRIG=late"
done
wait
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh int8 "base:;late:DOTLM_GEMV_TRIG=late;base2:;late2:DOTLM_GEMV_TRIG=late"
KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "base:;wpb8:DOTLM_GEMV=default,wpb=8;u4:DOTLM_GEMV=default,u=4"
cd $OUT && tar czf logs.tgz l && rm -rf l
