#!/usr/bin/env bash
# session 21 call 1: the e4m3 hardware widening (cvt.rn.f16x2.e4m3x2, knob fp8=cvt, cuda.gemv_fp8cvt) as the
# default at M <= 2: SASS of the build, test_gpu_gemv_multi / forward / ops, fixtures on cuda, the M = 1 GEMV
# alone (fold against cvt), fp8 decode A/B at 512 against DOTLM_DISABLE=cuda.gemv_fp8cvt (= fold)
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1) &
(cuobjdump -sass /tmp/r/dotlm_gpu_bench 2>/dev/null | awk '/Function :/{if(n)print n, f2, hadd, f; f=$3; n=0; f2=0; hadd=0; next} /\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\//{n++; if($0~/F2FP/)f2++; if($0~/HADD2.F32/)hadd++} END{print n, f2, hadd, f}' | grep -E "gemv_f" > $L/sass_counts.txt) &
for t in test_gpu_gemv_multi test_gpu_forward test_gpu_ops; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"
done
grep -iE "CHECK failed|FAIL" $L/test_gpu_*.log | head -5
grep -m1 "hardware widening" $L/test_gpu_gemv_multi.log
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 120 python3 tests/py/test_fixtures.py > $L/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures_cuda.log)"
DOTLM_GEMV_VARIANTS="default,fp8=fold;default,fp8=cvt;default,fp8=fold;default,fp8=cvt" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
grep -m1 "copy D2D" $L/gpu_bench.log; grep -E "^format" $L/gpu_bench.log | head -1; grep -E "^fp8 block +[0-9]+x[0-9]+ +[12] " $L/gpu_bench.log | grep -E "fp8=(fold|cvt)"
wait
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "cvt:;fold:DOTLM_DISABLE=cuda.gemv_fp8cvt"
/tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 64 --gen 8 --stats > $L/stats.log 2>&1; grep -E "gemv_fp8cvt|gemv_fold" $L/stats.log
tar czf $OUT/logs.tgz -C $L .
