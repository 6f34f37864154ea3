#!/usr/bin/env bash
# session 17 call 5: runtime segment length of the split decode attention (DOTLM_GPU_ATTN_SEG=32|64):
# GPU tests (both lengths), fixtures on cuda, ncu of the split kernel at 32, decode A/B in three formats
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(for f in bf16 int8; do timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-$f --preset qwen3-8b --format $f > $OUT/l/gen_$f.log 2>&1; echo "gen $f rc=$?"; done) &
timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen_fp8.log 2>&1; echo "gen fp8 rc=$?"
for t in test_gpu_ops test_gpu_forward; do
  timeout 200 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
DOTLM_GPU_ATTN_SEG=32 timeout 200 /tmp/r/test_gpu_forward > $OUT/l/test_gpu_forward_seg32.log 2>&1; echo "test_gpu_forward seg32 rc=$?: $(tail -1 $OUT/l/test_gpu_forward_seg32.log)"
grep -iE "CHECK failed|cluster merge" $OUT/l/test_gpu_*.log | head -8
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda.log 2>&1; echo "fixtures cuda rc=$?: $(tail -1 $OUT/l/fixtures_cuda.log)"
DOTLM_GPU_ATTN_SEG=32 DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $OUT/l/fixtures_cuda32.log 2>&1; echo "fixtures cuda seg32 rc=$?: $(tail -1 $OUT/l/fixtures_cuda32.log)"
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats --section LaunchStats --section Occupancy"
DOTLM_GPU_ATTN_SEG=32 DOTLM_DISABLE=cuda.graph timeout 200 ncu --clock-control none --cache-control none $SEC -k regex:dl_k_attn -c 4 --launch-skip 200 \
  /tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 512 --gen 12 > $OUT/l/ncu_attn32.log 2>&1; echo "ncu rc=$?"
grep -E "  void |Duration|Executed Instructions  |Issued Warp|Warp Cycles Per Issued|Achieved Active" $OUT/l/ncu_attn32.log | head -24
wait
V="s64:;s32:DOTLM_GPU_ATTN_SEG=32"
for f in fp8-block bf16 int8; do
  KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "$V" "$V"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
