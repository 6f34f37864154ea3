#!/usr/bin/env bash
# session 23 call 3: the register-tile prefill attention with 64 query vectors per block (256 threads,
# <= 128 registers) against 32 (DOTLM_GPU_ATTN_PF_BQ=32, the call-1 layout; same bits); tests, fixtures, ncu
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
grep -E "FAIL" $L/test_gpu_ops.log | head -20
wait
echo "t=$(( $(date +%s) - t0 ))s"
B() { # label fmt P gen env...
  local lab=$1 f=$2 P=$3 G=$4; shift 4
  env "$@" timeout 150 /tmp/r/dotlm bench --model /dev/shm/q8b-$f --backend cuda --prompt-len $P --gen $G > $L/b_${f}_${lab}_$P.log 2>&1
  echo "$f $lab P=$P: $(grep -E '^prompt' $L/b_${f}_${lab}_$P.log | sed 's/prompt: //') | $(grep -E '^decode' $L/b_${f}_${lab}_$P.log | sed 's/decode: //')"
}
for rep in 1 2; do
  for f in fp8-block int8; do
    B bq64 $f 4096 8 X=1
    B bq32 $f 4096 8 DOTLM_GPU_ATTN_PF_BQ=32
  done
done
B bq64 fp8-block 512 8 X=1
B bq32 fp8-block 512 8 DOTLM_GPU_ATTN_PF_BQ=32
echo "t=$(( $(date +%s) - t0 ))s"
DOTLM_DISABLE=cuda.graph timeout 200 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats -k regex:dl_k_attn_pf --launch-skip 50 --launch-count 1 /tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 4096 --gen 2 > $L/ncu_pf.log 2>&1
grep -E "Duration|Issued Warp|Achieved Occupancy|Registers Per|Compute \(SM\)|L1/TEX Cache|Active Warps Per|SM Active" $L/ncu_pf.log | head -20
timeout 120 /tmp/r/test_gpu_forward > $L/test_gpu_forward.log 2>&1; echo "test_gpu_forward rc=$?: $(tail -1 $L/test_gpu_forward.log)"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures.log)"; grep -E "FAIL" $L/fixtures.log | head
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
