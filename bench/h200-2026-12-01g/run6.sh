#!/usr/bin/env bash
# session 21 call 6: the fp8 ring GEMV pulls its activation chunks into L1 right after its PDL wait
# (prefetch.global.L1, cuda.gemv_xpf, on): registers, test_gpu_gemv_multi / forward / ops, fixtures on cuda,
# the GEMV alone with it and with DOTLM_DISABLE=cuda.gemv_xpf, fp8 decode A/B at 512 (twice, interleaved)
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
[ -f /dev/shm/q8b-fp8-block/config.json ] || (timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1) &
cuobjdump -res-usage /tmp/r/dotlm 2>/dev/null | grep -A1 -E "gemv_faILi3ELi1ELi4E" | grep -E "Function|REG" | paste - - | sed 's/  */ /g' | awk '{print $2, $3, $4}' > $L/res_usage.txt; head -4 $L/res_usage.txt
for t in test_gpu_gemv_multi test_gpu_forward test_gpu_ops; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"
done
grep -iE "CHECK failed|FAIL" $L/test_gpu_*.log | head -5
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 120 python3 tests/py/test_fixtures.py > $L/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures_cuda.log)"
for i in 1 2; do
  for v in on off; do
    e=""; [ $v = off ] && e="DOTLM_DISABLE=cuda.gemv_xpf"
    env $e DOTLM_GEMV_VARIANTS="default" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep > $L/gpu_bench_${v}_$i.log 2>&1
    echo "gpu_bench $v $i rc=$? $(grep -m1 'copy D2D' $L/gpu_bench_${v}_$i.log)"
    grep -E "^fp8 block +[0-9]+x[0-9]+ +[12] " $L/gpu_bench_${v}_$i.log | sed "s/\$/ $v/"
  done
done
wait
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "xpf:;off:DOTLM_DISABLE=cuda.gemv_xpf"
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "xpf2:;off2:DOTLM_DISABLE=cuda.gemv_xpf"
/tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 64 --gen 8 --stats > $L/stats.log 2>&1; grep -E "gemv_xpf|gemv_ring" $L/stats.log
tar czf $OUT/logs.tgz -C $L .
