#!/usr/bin/env bash
# session 24 call 4: decode rows of server steps through the split-KV kernel
# (cuda.attention.decode_rows): test_gpu_ops (new test_attention_decode_rows),
# test_gpu_forward, fixtures on cuda; then the server A/B of run3's setup
# (fp8-block Qwen3-8B shapes, loadgen at concurrency 8 and 32, ~400-word
# prompts, 128 tokens): --step-tokens 256 with the switch off (before) and
# on, and 1024 on
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
d=/dev/shm/q8b
(timeout 150 python3 tools/make_bench_model.py $d --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1; cp assets/tokenizers/qwen3/* $d/) &
gp=$!
for t in test_gpu_ops test_gpu_forward; do
  timeout 150 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"; grep FAIL $L/$t.log | head -5
done
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures.log)"; grep -E "FAIL" $L/fixtures.log | head
wait $gp
echo "t=$(( $(date +%s) - t0 ))s"
run() { # name, serve args...
  local n=$1; shift
  /tmp/r/dotlm serve $d --backend cuda --port 8123 --max-seqs 32 --ctx 2048 "$@" > $L/serve_$n.log 2>&1 &
  local sp=$!
  for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
  timeout 120 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 15 \
      --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen_$n.log 2>&1
  python3 -c "import urllib.request as u; print([l for l in u.urlopen('http://127.0.0.1:8123/metrics').read().decode().splitlines() if 'step' in l and not l.startswith('#')])" >> $L/loadgen_$n.log 2>&1
  echo "$n:"; grep -E '^\| [0-9]' $L/loadgen_$n.log
  kill -INT $sp; wait $sp
  echo "t=$(( $(date +%s) - t0 ))s"
}
run s256_off --step-tokens 256 --disable cuda.attention.decode_rows
run s256_on --step-tokens 256
run s1024_on --step-tokens 1024
tar czf $OUT/logs.tgz -C $L .
