#!/usr/bin/env bash
# session 21 call 2: the fp8 ring GEMV at M = 1 requests each chunk's activations and scales before its ring
# wait (cuda.gemv_xpre, on): registers / SASS, test_gpu_gemv_multi / forward / ops, fixtures on cuda, the GEMV
# alone with it and with DOTLM_DISABLE=cuda.gemv_xpre (twice each), fp8 decode A/B at 512
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
[ -f /dev/shm/q8b-fp8-block/config.json ] || (timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1) &
(cuobjdump -res-usage /tmp/r/dotlm_gpu_bench 2>/dev/null | grep -A1 "gemv_faILi3ELi1E" > $L/res_usage.txt;
 cuobjdump -sass /tmp/r/dotlm_gpu_bench 2>/dev/null | awk '/Function :/{if(n)print n, f; f=$3; n=0; next} /\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\//{n++} END{print n, f}' | grep -E "gemv_fa" > $L/sass_counts.txt) &
for t in test_gpu_gemv_multi test_gpu_forward test_gpu_ops; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"
done
grep -iE "CHECK failed|FAIL" $L/test_gpu_*.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 120 python3 tests/py/test_fixtures.py > $L/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures_cuda.log)"
for i in 1 2; do
  for v in on off; do
    e=""; [ $v = off ] && e="DOTLM_DISABLE=cuda.gemv_xpre"
    env $e DOTLM_GEMV_VARIANTS="default" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep > $L/gpu_bench_${v}_$i.log 2>&1
    echo "gpu_bench $v $i rc=$? $(grep -m1 'copy D2D' $L/gpu_bench_${v}_$i.log)"
    grep -E "^fp8 block +[0-9]+x[0-9]+ +[12] " $L/gpu_bench_${v}_$i.log | sed "s/\$/ $v/"
  done
done
wait
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "xpre:;off:DOTLM_DISABLE=cuda.gemv_xpre"
/tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 64 --gen 8 --stats > $L/stats.log 2>&1; grep -E "gemv_xpre|gemv_ring" $L/stats.log
cat $L/res_usage.txt | head -20
tar czf $OUT/logs.tgz -C $L .
