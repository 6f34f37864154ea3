#!/usr/bin/env bash
# session 25 call 2: the batched-M rule mlb=2 as the default (the capped
# ring at M <= 4, rows per warp by shape): test_gpu_gemv_multi (mlb 0/1/2
# rotated), test_gpu_ops, test_gpu_forward, fixtures on cuda; the GEMV
# table default / mlb=0 / mlb=1; ncu of the M = 8 fp8 register loop (4 and
# 2 rows); the server at 8 and 32 clients, default against mlb=0
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
d=/dev/shm/q8b
(timeout 150 python3 tools/make_bench_model.py $d --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1; cp assets/tokenizers/qwen3/* $d/) &
gp=$!
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"; grep FAIL $L/$t.log | head -5
done
echo "t=$(( $(date +%s) - t0 ))s"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 120 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures.log)"; grep -E "FAIL" $L/fixtures.log | head
echo "t=$(( $(date +%s) - t0 ))s"
DOTLM_GEMV_VARIANTS="default;default,mlb=0;default,mlb=1" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1
echo "gpu_bench rc=$?"; grep -E "copy D2D|GEMV settings|fp8 block +(5120x17408|17408x5120|6144x5120) +[1-8] " $L/gpu_bench.log | head -60
sed -n '/multi-weight/,/^$/p' $L/gpu_bench.log | grep fp8
echo "t=$(( $(date +%s) - t0 ))s"
SEC="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis"
DOTLM_GEMV_VARIANTS="default,mlb=0" timeout 100 ncu --clock-control none $SEC --kernel-name-base mangled -k regex:'_Z11dl_k_gemv_fILi4ELi8ELi4E' --launch-count 1 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/ncu_m8r4.log 2>&1; echo "ncu r4 rc=$?"
DOTLM_GEMV_VARIANTS="default" timeout 100 ncu --clock-control none $SEC --kernel-name-base mangled -k regex:'_Z11dl_k_gemv_fILi4ELi8ELi2E' --launch-count 1 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/ncu_m8r2.log 2>&1; echo "ncu r2 rc=$?"
for f in m8r4 m8r2; do echo "== $f"; grep -E "dl_k_gemv|Duration|Memory Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Registers Per|Issued Ipc|No Eligible|Warp Cycles Per Issued|L1/TEX Cache Throughput|Executed Instructions  " $L/ncu_$f.log | head -20; done
wait $gp
echo "t=$(( $(date +%s) - t0 ))s"
run() { # name, DOTLM_GEMV spec
  local n=$1; shift
  DOTLM_GEMV=$1 /tmp/r/dotlm serve $d --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > $L/serve_$n.log 2>&1 &
  local sp=$!
  for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
  timeout 100 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 15 \
      --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen_$n.log 2>&1
  echo "$n:"; grep -E '^\| [0-9]' $L/loadgen_$n.log
  kill -INT $sp; wait $sp
  echo "t=$(( $(date +%s) - t0 ))s"
}
run def default
run mlb0 default,mlb=0
[ $(( $(date +%s) - t0 )) -lt 470 ] && run def2 default
tar czf $OUT/logs.tgz -C $L .
