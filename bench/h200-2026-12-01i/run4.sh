#!/usr/bin/env bash
# session 23 call 4: the prompt attention with its V tile requested before the scores (and at head_dim 64 the next
# K tile before the V products) against 202d1f6 kernel (dotlm_v2, built from it), same bits; the long-history test rig
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
for f in fp8-block int8; do
  (timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $L/gen_$f.log 2>&1; echo "gen $f rc=$?") &
done
timeout 200 /tmp/r/test_gpu_ops > $L/test_gpu_ops.log 2>&1; echo "test_gpu_ops rc=$?: $(tail -1 $L/test_gpu_ops.log)"
timeout 120 /tmp/r/test_gpu_forward > $L/test_gpu_forward.log 2>&1; echo "test_gpu_forward rc=$?: $(tail -1 $L/test_gpu_forward.log)"
grep -E "FAIL" $L/test_gpu_ops.log | head -20
wait
echo "t=$(( $(date +%s) - t0 ))s"
B() { # label bin fmt P
  local lab=$1 bin=$2 f=$3 P=$4
  timeout 150 /tmp/r/$bin bench --model /dev/shm/q8b-$f --backend cuda --prompt-len $P --gen 8 > $L/b_${f}_${lab}_$P.log 2>&1
  echo "$f $lab P=$P: $(grep -E '^prompt' $L/b_${f}_${lab}_$P.log | sed 's/prompt: //')"
}
for rep in 1 2; do
  for f in fp8-block int8; do
    B vpre dotlm $f 4096
    B v2 dotlm_v2 $f 4096
  done
done
echo "t=$(( $(date +%s) - t0 ))s"
DOTLM_DISABLE=cuda.graph timeout 200 ncu --clock-control none --section SpeedOfLight --section Occupancy --section SchedulerStats -k regex:dl_k_attn_pf --launch-skip 50 --launch-count 1 /tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 4096 --gen 2 > $L/ncu_pf.log 2>&1
grep -E "Duration|Issued Warp|Achieved Occupancy|Registers Per|Compute \(SM\)|L1/TEX Cache|SM Active" $L/ncu_pf.log | head -20
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
