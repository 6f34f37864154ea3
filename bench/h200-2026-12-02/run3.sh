#!/usr/bin/env bash
# session 24 call 3: the server's --step-tokens on the GPU (default 256,
# never re-measured since prompts got 2048-token forwards): dotlm serve on a
# random Qwen3-8B-shaped fp8-block checkpoint, bench/loadgen.py closed-loop
# streaming completions at concurrency 8 and 32, prompts of ~400 words,
# 128 output tokens, for --step-tokens 128, 256, 512, 1024
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
d=/dev/shm/q8b
timeout 150 python3 tools/make_bench_model.py $d --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1 || { echo gen failed; tail -3 $L/gen.log; }
cp assets/tokenizers/qwen3/* $d/ 2>/dev/null
echo "t=$(( $(date +%s) - t0 ))s"
for st in 256 1024 128 512; do
  /tmp/r/dotlm serve $d --backend cuda --port 8123 --max-seqs 32 --ctx 2048 --step-tokens $st > $L/serve_$st.log 2>&1 &
  sp=$!
  for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
  timeout 120 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 15 \
      --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen_$st.log 2>&1
  echo "step-tokens $st:"; grep -E '^\| [0-9]' $L/loadgen_$st.log
  kill -INT $sp; wait $sp
  echo "t=$(( $(date +%s) - t0 ))s"
done
tar czf $OUT/logs.tgz -C $L .
