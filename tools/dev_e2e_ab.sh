#!/usr/bin/env bash
# A/B decode runs on the GPU test machine (after tools/pack_device.sh; carry
# .devpack): one random Qwen3-8B-shaped checkpoint of format FMT, then
# `dotlm bench --prompt-len 512 --gen 64` once per variant, the whole list
# twice (interleaved, so drift of the machine hits every variant alike), then
# the P4096 variants at --prompt-len 4096. One line per run; logs in $OUT.
# KEEP=1 leaves the checkpoint in /dev/shm/q8b-FMT for the next call;
# PLEN=N runs the first list at --prompt-len N instead of 512.
#
#   tools/dev_e2e_ab.sh FMT "label:ENV=v ENV2=w;label2:;..." ["label:ENV=v;..."]
#   e.g. tools/dev_e2e_ab.sh fp8-block "on:;off:DOTLM_DISABLE=cuda.norm_prewait"
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT /tmp/r
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
fmt=$1; d=/dev/shm/q8b-$fmt
# a checkpoint left by an earlier call with KEEP=1 is reused
[ -f "$d/config.json" ] || timeout 150 python3 tools/make_bench_model.py "$d" --preset qwen3-8b --format "$fmt" > /dev/null 2>&1 || { echo "gen failed"; exit 1; }
run() { # label plen env...
  local l=$1 p=$2; shift 2
  env "$@" timeout 120 /tmp/r/dotlm bench --model "$d" --backend cuda --prompt-len $p --gen 64 > "$OUT/e2e_${fmt}_${l}_$p.log" 2>&1
  echo "$fmt $l P=$p $(grep -E '^decode' "$OUT/e2e_${fmt}_${l}_$p.log" | sed 's/decode: 64 tokens in //') | $(grep -E '^prompt' "$OUT/e2e_${fmt}_${l}_$p.log" | sed 's/.*= //')"
}
IFS=';' read -ra vs <<< "$2"
for rep in 1 2; do
  for v in "${vs[@]}"; do run "${v%%:*}" "${PLEN:-512}" ${v#*:}; done
done
IFS=';' read -ra v4 <<< "${3:-}"
for v in "${v4[@]}"; do [ -n "$v" ] && run "${v%%:*}" 4096 ${v#*:}; done
[ -n "${KEEP:-}" ] || rm -rf "$d"
