#!/usr/bin/env bash
# The AVX-512VL batched-decode tile of the 16-bit CPU matmul (4 <= M <= 8,
# rows spread) against the AVX2 4x2 spread tile it replaces
# (DOTLM_DISABLE='cpu.matmul.*.avx512vl.batch'), interleaved: GEMV GB/s of
# weight bytes at M = 4..8, 1 and 2 threads, then `dotlm serve` on a bf16
# Qwen2.5-0.5B-shaped checkpoint at concurrency 1, 4, 8.
# Model: python3 tools/make_bench_model.py --preset qwen2.5-0.5b --format bf16
# /tmp/q05_bf16, with the Qwen3 tokenizer files copied next to it (SRV dir).
cd "$(dirname "$0")/../.."
D=${D:-./build/dotlm}
SRV=${SRV:-/tmp/q05_bf16_srv}
for round in 1 2; do
  for sw in on off; do
    if [ $sw = off ]; then export DOTLM_DISABLE='cpu.matmul.*.avx512vl.batch'; else unset DOTLM_DISABLE; fi
    for t in 1 2; do
      echo "== round $round, batch tile $sw, $t thread(s)"
      $D bench --shape 4096x4096 -t $t --reps 10 --gemv-m 4,5,6,7 2>&1 | grep -E '^(format|bf16|f16|f32) '
      $D bench --shape 4096x4096 -t $t --reps 10 --gemv-m 8,8,8,8 2>&1 | grep -E '^(bf16|f16|f32) ' | awk '{print $1, "M=8:", $2, $3}'
    done
  done
done
[ -d "$SRV" ] || exit 0
for round in 1 2; do
  for sw in on off; do
    if [ $sw = off ]; then export DOTLM_DISABLE='cpu.matmul.*.avx512vl.batch'; else unset DOTLM_DISABLE; fi
    echo "== round $round, serve, batch tile $sw"
    log=$(mktemp)
    $D serve "$SRV" --port 0 -t 2 --max-seqs 16 > "$log" 2>&1 &
    pid=$!
    for i in $(seq 100); do port=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://'); [ -n "$port" ] && break; sleep 0.5; done
    python3 bench/loadgen.py --url http://127.0.0.1:$port --concurrency 1,4,8 --max-tokens 64 --prompt-words 100 --markdown
    kill $pid; wait $pid 2>/dev/null; rm -f "$log"
  done
done
