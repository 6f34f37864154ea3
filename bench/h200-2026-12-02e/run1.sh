#!/usr/bin/env bash
# session 28 call 1: the M = 1 fp8 long-K rows rule (2 rows per warp under
# a 48-register cap where the 4-row grid leaves the GPU partly empty) and
# the twin layout in one header: the GPU tests, the GEMV alone with the
# twin (rule / r1=4) and without, fp8 decode at 512 with the twin + rule,
# the twin without the rule, and neither (interleaved, twice)
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
B=/tmp/r; export LD_LIBRARY_PATH=$B/lib
(timeout 200 python3 tools/make_bench_model.py /dev/shm/m_f8 --preset qwen3-8b --format fp8-block > $L/gen_f8.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_f8/) &
gp=$!
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward; do
  timeout 200 $B/$t > $L/$t.log 2>&1; echo "$t rc=$? $(tail -1 $L/$t.log)"
done
grep -E "rows rule|FAIL" $L/test_gpu_gemv_multi.log | head -5
DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1,2 DOTLM_GEMV_VARIANTS="default;default,r1=4" timeout 120 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_twin.log 2>&1; echo "bench twin rc=$?"
DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,i8r1=1;default,i8ks=0" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "bench rc=$?"
wait $gp
echo "t=$(( $(date +%s) - t0 ))s"
for i in 1 2; do
  for v in rule norule off; do
    case $v in rule) e=DOTLM_GPU_GEMV_TWIN=1;; norule) e="DOTLM_GPU_GEMV_TWIN=1 DOTLM_DISABLE=cuda.gemv_rows2";; off) e=X=1;; esac
    env $e timeout 60 $B/dotlm bench --model /dev/shm/m_f8 --backend cuda --prompt-len 512 --gen 64 > $L/dec_${v}_$i.log 2>&1
    echo "decode $v $i: $(grep -E '^decode' $L/dec_${v}_$i.log | tail -1)"
  done
done
DOTLM_GPU_GEMV_TWIN=1 timeout 60 $B/dotlm bench --model /dev/shm/m_f8 --backend cuda --prompt-len 512 --gen 16 --stats > $L/dec_counters.log 2>&1
grep -E "gemv_rows2|gemv_twin" $L/dec_counters.log | head -4
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
grep -E "copy D2D" $L/gpu_bench_twin.log
grep -E "^fp8 block +[0-9]+x[0-9]+ +[12] " $L/gpu_bench_twin.log | cut -c1-140
grep -E "^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-140
