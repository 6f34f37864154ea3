#!/usr/bin/env bash
# session 23 call 2: the end-to-end table with the register-tile prefill attention and 2048-token prompt
# forwards (main 55f54b6), against the previous defaults (256-token forwards, the tiled kernel:
# --prefill-chunk 256 DOTLM_DISABLE=cuda.attention.prefill); the prefill's kernel profile and ncu of the new kernel
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
for f in fp8-block int8 bf16; do
  (timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $L/gen_$f.log 2>&1; echo "gen $f rc=$?") &
done
timeout 60 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/copybw.log 2>&1; grep -iE "copy" $L/copybw.log | head -3
wait
echo "t=$(( $(date +%s) - t0 ))s"
B() { # label fmt P gen env... ; extra args in $ARGS
  local lab=$1 f=$2 P=$3 G=$4; shift 4
  env "$@" timeout 150 /tmp/r/dotlm bench --model /dev/shm/q8b-$f --backend cuda --prompt-len $P --gen $G ${ARGS:-} > $L/b_${f}_${lab}_$P.log 2>&1
  echo "$f $lab P=$P: $(grep -E '^prompt' $L/b_${f}_${lab}_$P.log | sed 's/prompt: //') | $(grep -E '^decode' $L/b_${f}_${lab}_$P.log | sed 's/decode: //')"
}
for f in fp8-block int8 bf16; do
  for P in 512 4096; do
    ARGS= B main $f $P 64 X=1
    ARGS="--prefill-chunk 256" B before $f $P 8 DOTLM_DISABLE=cuda.attention.prefill
  done
  ARGS= B main2 $f 512 64 X=1
  echo "t=$(( $(date +%s) - t0 ))s"
done
DOTLM_GPU_PROFILE=1 timeout 150 /tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 4096 --gen 4 > $L/prof_fp8_4096.log 2>&1
grep -E "attn|gemm|prompt" $L/prof_fp8_4096.log | head -12
DOTLM_DISABLE=cuda.graph timeout 240 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats -k regex:dl_k_attn_pf --launch-skip 50 --launch-count 1 /tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 4096 --gen 2 > $L/ncu_pf.log 2>&1
grep -E "Duration|Issued Warp|Achieved Occupancy|Registers Per|Compute \(SM\)|Memory Throughput|Stall|Block Limit" $L/ncu_pf.log | head -20
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
