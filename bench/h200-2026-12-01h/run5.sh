#!/usr/bin/env bash
# session 22 call 5: the split decode attention and its combine after 4096 positions under ncu (fp8 Qwen3-8B
# decode, eager: graphs off; the first 36 decode launches are the warm-up token at position 0, so skip 72)
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
d=/dev/shm/q8b-fp8-block
[ -f $d/config.json ] || timeout 150 python3 tools/make_bench_model.py $d --preset qwen3-8b --format fp8-block > /dev/null 2>&1 || echo gen failed
echo "t=$(( $(date +%s) - t0 ))s"
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats --section LaunchStats --section Occupancy --section SourceCounters"
for k in dl_k_attn_dec dl_k_attn_combine; do
DOTLM_DISABLE=cuda.graph timeout 150 ncu --clock-control none --cache-control none $SEC -k regex:$k --launch-skip 72 --launch-count 2 \
  /tmp/r/dotlm bench --model $d --backend cuda --prompt-len 4096 --gen 4 > $L/ncu_$k.log 2>&1; echo "ncu $k rc=$?"
grep -E "  void |Duration|Executed Instructions  |Issued Warp|DRAM Throughput|Warp Cycles Per Issued|Achieved Occ|Registers Per|Theoretical Occ|Block Limit Reg|L2 Hit|L1/TEX Hit|Mem Busy|Max Bandwidth|Grid Size|Waves|Stall" $L/ncu_$k.log | head -34
done
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
