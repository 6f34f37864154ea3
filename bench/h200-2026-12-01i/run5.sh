#!/usr/bin/env bash
# session 23 call 5: the W8A8 GEMV splits K by shape for rows of >= 16384 codes (i8ks=0 by default, was 1):
# test_gpu_gemv_multi, the M = 1 GEMV against DOTLM_GEMV=default,i8ks=1, int8 decode of Qwen3-14B shapes (its
# down projection is 5120 x 17408) and Qwen3-8B shapes (no weight that long: nothing changes) against it
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
(timeout 250 python3 tools/make_bench_model.py /dev/shm/q14b-int8 --preset qwen3-14b --format int8 > $L/gen_14b.log 2>&1; echo "gen 14b rc=$?") &
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-int8 --preset qwen3-8b --format int8 > $L/gen_8b.log 2>&1; echo "gen 8b rc=$?") &
timeout 200 /tmp/r/test_gpu_gemv_multi > $L/test_gpu_gemv_multi.log 2>&1; echo "test_gpu_gemv_multi rc=$?: $(tail -1 $L/test_gpu_gemv_multi.log)"
grep FAIL $L/test_gpu_gemv_multi.log | head -5
echo "t=$(( $(date +%s) - t0 ))s"
DOTLM_GEMV_VARIANTS="default;default,i8ks=1" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1
grep -E "copy D2D|^int8" $L/gpu_bench.log | grep -E "copy|  1 " | head -12
wait
echo "t=$(( $(date +%s) - t0 ))s"
B() { # label model env...
  local lab=$1 m=$2; shift 2
  env "$@" timeout 150 /tmp/r/dotlm bench --model /dev/shm/$m --backend cuda --prompt-len 512 --gen 64 --stats > $L/b_${m}_${lab}.log 2>&1
  echo "$m $lab: $(grep -E '^decode' $L/b_${m}_${lab}.log | sed 's/decode: //') | $(grep -E '^prompt' $L/b_${m}_${lab}.log | sed 's/prompt: //') | ksplit $(grep -E 'int8_gemv_ksplit' $L/b_${m}_${lab}.log | awk '{print $2}')"
}
for rep in 1 2; do
  B split q14b-int8 X=1
  B nosplit q14b-int8 DOTLM_GEMV=default,i8ks=1
done
B split q8b-int8 X=1
B nosplit q8b-int8 DOTLM_GEMV=default,i8ks=1
grep -E "streamed" $L/b_q14b-int8_split.log
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
