#!/usr/bin/env bash
# session 25 call 1: the register-capped fp8 ring at M >= 3 (knob mlb),
# the attention's opt-in page lookups through dl_kv_row, the xperm switch
# in the graph key: test_gpu_gemv_multi (mlb rotated, bitwise against v1,
# ring counter checked), test_gpu_ops, test_gpu_forward, fixtures on cuda;
# the GEMV table for default / mlb=1 / mlb=1,rm=2 / rm=2; the server at 8
# and 32 clients with default, mlb=1 and mlb=1,rm=2
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
DOTLM_GEMV_VARIANTS="default;default,mlb=1;default,mlb=1,rm=2;default,rm=2" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1
echo "gpu_bench rc=$?"; grep -E "copy|fp8 block +(5120x17408|17408x5120|6144x5120) +[348] " $L/gpu_bench.log | head -60
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
run mlb default,mlb=1
[ $(( $(date +%s) - t0 )) -lt 480 ] && run mlbr2 default,mlb=1,rm=2
tar czf $OUT/logs.tgz -C $L .
