#!/usr/bin/env bash
# session 25 call 3: ncu of the batched fp8 GEMVs under the new default
# (mlb=2): M = 4 through the capped ring (4 rows), M = 8 register loop with
# 2 and 4 rows; test_gpu_gdn and the SASS gate on the same binaries as run2
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
timeout 200 /tmp/r/test_gpu_gdn > $L/test_gpu_gdn.log 2>&1; echo "test_gpu_gdn rc=$?: $(tail -1 $L/test_gpu_gdn.log)"
timeout 120 tools/gpu_gate.sh --no-ptx --no-hip --sass /tmp/r/dotlm > $L/gate.log 2>&1; echo "gate rc=$?: $(tail -1 $L/gate.log)"
echo "t=$(( $(date +%s) - t0 ))s"
SEC="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
prof() { # name, mangled-name regex
  timeout 100 ncu --clock-control none $SEC --kernel-name-base mangled -k regex:"$2" --launch-count 1 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/ncu_$1.log 2>&1; echo "ncu $1 rc=$?"
}
prof m4r4 '_Z12dl_k_gemv_faILi3ELi4ELi4ELi1ELi2ELb1ELi2E'
prof m8r2 '_Z11dl_k_gemv_fILi3ELi8ELi2ELi2ELi1ELi1ELb1E'
prof m8r4 '_Z11dl_k_gemv_fILi3ELi8ELi4ELi2ELi1ELi1ELb1E'
prof m1 '_Z12dl_k_gemv_faILi3ELi1ELi4ELi2ELi2ELb0ELi0E'
for f in m4r4 m8r2 m8r4 m1; do echo "== $f"; grep -E "  dl_k_gemv|Duration|DRAM Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Registers Per|Issued Ipc Active|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|L1/TEX Cache Throughput|Executed Instructions  |Stall|stall|issue_stalled" $L/ncu_$f.log | head -60; done
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
