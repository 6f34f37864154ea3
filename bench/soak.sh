#!/usr/bin/env bash
# Soak test: `dotlm serve` under constant load (concurrency 16, streaming
# completions with mixed lengths) for MINUTES, sampling the server's RSS and
# the request counters every 10 s. Fails (exit 1) on any failed request or
# when RSS grows by more than 10% (plus 8 MiB) between the first sample after
# warm-up and the end.
#
# The prefix cache keeps prompt blocks after their requests end, so the KV
# pool's pages are touched one by one until the whole pool (max-seqs x ctx
# positions) has been used once; RSS grows until then by design. The default
# serve options use --ctx 512 so that this happens during the warm-up; pass
# your own options to override.
#
# usage: bench/soak.sh MODEL_DIR [MINUTES=10] [dotlm serve options (default --ctx 512)...]
#   env: DOTLM_BIN (default build/dotlm), CONC (16), MAX_TOKENS (64), THREADS (all)
set -euo pipefail
MODEL=${1:?usage: bench/soak.sh MODEL_DIR [MINUTES] [serve options]}
MIN=${2:-10}
shift $(( $# >= 2 ? 2 : 1 ))
[ $# -eq 0 ] && set -- --ctx 512
BIN=${DOTLM_BIN:-build/dotlm}
CONC=${CONC:-16}
HERE=$(cd "$(dirname "$0")" && pwd)
LOG=$(mktemp /tmp/dotlm_soak.XXXXXX)
"$BIN" serve "$MODEL" --port 0 --max-seqs "$CONC" ${THREADS:+-t $THREADS} "$@" 2>"$LOG" &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 600); do
  PORT=$(grep -o 'listening on http://[^ ]*' "$LOG" | sed 's/.*://' || true)
  [ -n "$PORT" ] && break
  kill -0 $PID 2>/dev/null || { cat "$LOG"; exit 1; }
  sleep 0.1
done
KVB=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^dotlm_kv_blocks_total/{print $2}')
echo "soak: server pid $PID port $PORT ($*), $KVB KV blocks, concurrency $CONC, $MIN min, $(date -u +%FT%TZ)"
DUR=$(( MIN * 60 ))
python3 "$HERE/loadgen.py" --url "http://127.0.0.1:$PORT" --concurrency "$CONC" --duration "$DUR" \
  --max-tokens "${MAX_TOKENS:-64}" --prompt-words 60 --temperature 0.8 --json "$LOG.json" > "$LOG.load" 2>&1 &
LG=$!
printf "%6s %10s %10s %10s %8s\n" "t(s)" "RSS(KiB)" "requests" "gen_tok" "running"
T0=$(date +%s)
FIRST=""
while kill -0 $LG 2>/dev/null; do
  sleep 10
  T=$(( $(date +%s) - T0 ))
  RSS=$(awk '/VmRSS/{print $2}' /proc/$PID/status)
  M=$(curl -s "http://127.0.0.1:$PORT/metrics" || true)
  REQ=$(echo "$M" | awk '/^dotlm_requests_total\{code="200"\}/{print $2}')
  GEN=$(echo "$M" | awk '/^dotlm_generation_tokens_total/{print $2}')
  RUN=$(echo "$M" | awk '/^dotlm_running_sequences/{print $2}')
  printf "%6d %10s %10s %10s %8s\n" "$T" "$RSS" "${REQ:-?}" "${GEN:-?}" "${RUN:-?}"
  if [ -z "$FIRST" ] && [ "$T" -ge 30 ]; then FIRST=$RSS; fi
  LAST=$RSS
done
wait $LG || true
cat "$LOG.load"
FAILED=$(python3 -c "import json,sys; print(sum(r['failed'] for r in json.load(open(sys.argv[1]))))" "$LOG.json")
OK=$(python3 -c "import json,sys; print(sum(r['requests'] for r in json.load(open(sys.argv[1]))))" "$LOG.json")
kill -TERM $PID; wait $PID || true
trap - EXIT
FIRST=${FIRST:-$LAST}
echo "soak: $OK requests ok, $FAILED failed; RSS after warm-up ${FIRST} KiB, at end ${LAST} KiB"
if [ "$FAILED" != 0 ]; then echo "soak: FAILED requests"; exit 1; fi
if [ "$LAST" -gt $(( FIRST + FIRST / 10 + 8192 )) ]; then echo "soak: RSS grew"; exit 1; fi
echo "soak: PASS"
