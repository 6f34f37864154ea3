#!/usr/bin/env bash
# dotlm serve on the W8A8 Qwen2.5-0.5B-shaped checkpoint (SRV, with the Qwen3
# tokenizer files), this build against OLD (a dotlm from before the VNNI-512
# tiles took M = 2, 3), interleaved, two rounds: bench/loadgen.py at
# concurrency 1, 2, 3, 4, 64 tokens, -t 2 (the load generator on the same cores).
cd "$(dirname "$0")/../.."
D=${D:-./build/dotlm}
OLD=${OLD:?set OLD to the older dotlm}
SRV=${SRV:-/tmp/q05_int8}
for round in 1 2; do
  for b in new old; do
    B=$D; [ $b = old ] && B=$OLD
    echo "== round $round, serve, $b"
    log=$(mktemp)
    $B serve "$SRV" --port 0 -t 2 --max-seqs 16 > "$log" 2>&1 &
    pid=$!
    for i in $(seq 100); do port=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://'); [ -n "$port" ] && break; sleep 0.5; done
    python3 bench/loadgen.py --url http://127.0.0.1:$port --concurrency 1,2,3,4 --max-tokens 64 --prompt-words 100 --markdown
    kill $pid; wait $pid 2>/dev/null; rm -f "$log"
  done
done
