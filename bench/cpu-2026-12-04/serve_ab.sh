#!/bin/bash
# dotlm serve on the Qwen2.5-0.5B-shaped fp8 checkpoint (with the Qwen3
# tokenizer files copied in), today's CPU decode kernels on and off:
# concurrency 1, 4, 8, streaming completions, 64 tokens.
cd "$(dirname "$0")/../.."
M=${1:-/tmp/q05_fp8-block}
for d in none cpu.gemv.spread,cpu.qmm.fp8.avx512vbmi; do
  echo "== serve disable=$d"
  log=$(mktemp)
  DOTLM_DISABLE=$d ./build/dotlm serve "$M" --port 0 -t 2 --max-seqs 16 > "$log" 2>&1 &
  pid=$!
  for i in $(seq 100); do port=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://'); [ -n "$port" ] && break; sleep 0.5; done
  python3 bench/loadgen.py --url http://127.0.0.1:$port --concurrency 1,4,8 --max-tokens 64 --prompt-words 100 --markdown
  kill $pid; wait $pid 2>/dev/null; rm -f "$log"
done
