#!/usr/bin/env bash
# session 26 call 2: the token-interleaved permuted activations and the
# scattered warp sums in the float GEMV epilogue (same bits), on the
# machine of run1 (main's previous binaries): the GPU tests and fixtures;
# the GEMV table, single-sequence fp8 decode twice, the server at 8 / 32
# clients; ncu of the M = 8 fp8 GEMV
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
before() { [ $(( $(date +%s) - t0 )) -lt $1 ]; }
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
timeout 100 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_r.log 2>&1
echo "gpu_bench r rc=$?"
echo "t=$(( $(date +%s) - t0 ))s"
wait $gp
for i in 1 2; do
  timeout 60 /tmp/r/dotlm bench --model $d --backend cuda --prompt-len 512 --gen 64 > $L/dec_r$i.log 2>&1; echo "decode r$i: $(grep -E '^decode' $L/dec_r$i.log | tail -1)"
done
/tmp/r/dotlm serve $d --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > $L/serve_new.log 2>&1 &
sp=$!
for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
timeout 100 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 15 \
    --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen_new.log 2>&1
echo "new:"; grep -E '^\| [0-9]' $L/loadgen_new.log
kill -INT $sp; wait $sp
echo "t=$(( $(date +%s) - t0 ))s"
rm -rf $d
before 420 && { DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 120 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
  echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures.log)"; grep -E "FAIL" $L/fixtures.log | head; }
echo "t=$(( $(date +%s) - t0 ))s"
SEC="--section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats"
before 520 && { timeout 60 ncu --clock-control none $SEC --kernel-name-base mangled -k regex:'_Z11dl_k_gemv_fILi3ELi8ELi2ELi2ELi2ELi1ELb1E' --launch-count 1 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/ncu_m8r2.log 2>&1; echo "ncu rc=$?"
  grep -E "  dl_k_gemv|Duration|Registers Per|Issued Ipc Active|Executed Instructions  " $L/ncu_m8r2.log | head -8; }
tar czf $OUT/logs.tgz -C $L .
grep -E "copy D2D" $L/gpu_bench_r.log
grep -E "^(fp8 block|int8 W8A8|bf16) +[0-9]+x[0-9]+ +[1248] " $L/gpu_bench_r.log | cut -c1-96 | head -40
sed -n '/multi-weight/,/^$/p' $L/gpu_bench_r.log | grep fp8
