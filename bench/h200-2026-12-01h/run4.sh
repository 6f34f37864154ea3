#!/usr/bin/env bash
# session 22 call 4: the split decode attention after 4096 positions under ncu (fp8 Qwen3-8B decode, eager:
# graphs off), and decode at 4096 with heads per block capped at 1 and 4 and segments of 32
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
d=/dev/shm/q8b-fp8-block
timeout 150 python3 tools/make_bench_model.py $d --preset qwen3-8b --format fp8-block > /dev/null 2>&1 || echo gen failed
echo "t=$(( $(date +%s) - t0 ))s"
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats --section LaunchStats --section Occupancy"
DOTLM_DISABLE=cuda.graph timeout 200 ncu --clock-control none --cache-control none $SEC -k regex:dl_k_attn --launch-skip 400 --launch-count 4 \
  /tmp/r/dotlm bench --model $d --backend cuda --prompt-len 4096 --gen 8 > $L/ncu_attn4096.log 2>&1; echo "ncu rc=$?"
grep -E "  void |  dl_k|Duration|Executed Instructions  |Issued Warp|DRAM Throughput|Warp Cycles Per Issued|Achieved Active|Achieved Occ|Registers Per|Theoretical Occ|Block Limit|Stall|L2 Hit|L1/TEX Hit|Mem Busy|Max Bandwidth|Grid Size|Waves" $L/ncu_attn4096.log | head -70
echo "t=$(( $(date +%s) - t0 ))s"
KEEP=1 OUT=$L PLEN=4096 tools/dev_e2e_ab.sh fp8-block "main:;gb1:DOTLM_GPU_ATTN_GB=1;gb4:DOTLM_GPU_ATTN_GB=4;s32:DOTLM_GPU_ATTN_SEG=32"
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
