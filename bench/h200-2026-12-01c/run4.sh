#!/usr/bin/env bash
# session 17 call 4: the split decode attention under ncu (fp8 Qwen3-8B decode after 512, eager), and decode
# A/B: cluster merge on / off, heads per block 2 and 4, the q/k prologue (opt-in) with the cluster merge
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/l/gpu.txt 2>&1
(timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-bf16 --preset qwen3-8b --format bf16 > $OUT/l/gen_bf16.log 2>&1; echo "gen bf16 rc=$?") &
timeout 200 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $OUT/l/gen_fp8.log 2>&1; echo "gen fp8 rc=$?"
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats --section LaunchStats --section Occupancy"
DOTLM_DISABLE=cuda.graph timeout 200 ncu --clock-control none --cache-control none $SEC -k regex:dl_k_attn_dec --launch-skip 200 --launch-count 2 \
  /tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 512 --gen 12 > $OUT/l/ncu_attn.log 2>&1; echo "ncu rc=$?"
grep -E "  void |Duration|Executed Instructions  |Issued Warp|DRAM Throughput|Warp Cycles Per Issued|Achieved Active|Registers Per|Theoretical Occ|Block Limit|Stall|L2 Hit|Mem Busy|Max Bandwidth" $OUT/l/ncu_attn.log | head -40
wait
V="cl:;nocl:DOTLM_DISABLE=cuda.attention.cluster;gb2:DOTLM_GPU_ATTN_GB=2;qk:DOTLM_GPU_ATTN_QK=1"
for f in fp8-block bf16; do
  KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh $f "$V"
done
cd $OUT && tar czf logs.tgz l && rm -rf l
