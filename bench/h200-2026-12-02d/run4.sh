#!/usr/bin/env bash
# session 27 call 4: rows per warp for the M = 1 twin (the K >= 8192 -> 2
# rows rule lost in run3): the kernel alone with DOTLM_BENCH_TWIN=1 under
# default / r1=4 / r1=2; fp8 decode at 512 with the twin and the rule, the
# twin with 4 rows everywhere (DOTLM_GEMV=default,r1=4), and without the
# twin, interleaved; test_gpu_gemv_multi (its gate/up twin check fixed)
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
B=/tmp/r; export LD_LIBRARY_PATH=$B/lib
(timeout 200 python3 tools/make_bench_model.py /dev/shm/m_f8 --preset qwen3-8b --format fp8-block > $L/gen_f8.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_f8/) &
gp=$!
DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,r1=4;default,r1=2" timeout 100 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_twin.log 2>&1; echo "bench rc=$?"
timeout 200 $B/test_gpu_gemv_multi > $L/test_gpu_gemv_multi.log 2>&1; echo "gemv_multi rc=$? $(tail -1 $L/test_gpu_gemv_multi.log)"
wait $gp
echo "t=$(( $(date +%s) - t0 ))s"
for i in 1 2; do
  for v in rule r4 off; do
    case $v in rule) e=X=1;; r4) e=DOTLM_GEMV=default,r1=4;; off) e=DOTLM_DISABLE=cuda.gemv_twin;; esac
    env $e timeout 60 $B/dotlm bench --model /dev/shm/m_f8 --backend cuda --prompt-len 512 --gen 64 > $L/dec_${v}_$i.log 2>&1
    echo "decode $v $i: $(grep -E '^decode' $L/dec_${v}_$i.log | tail -1)"
  done
done
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
grep -E "copy D2D" $L/gpu_bench_twin.log
grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gpu_bench_twin.log | cut -c1-140
