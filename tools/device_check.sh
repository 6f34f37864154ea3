#!/usr/bin/env bash
# One call on the GPU test machine when its image lacks dotlm's C libraries
# (jansson, PCRE2, utf8proc, libmicrohttpd): binaries are built on the dev
# machine (tools/pack_device.sh -> .devpack/devrun.tar.xz, with those .so
# files) and this script, in order of importance and each step time-boxed:
#   1. regenerates the transformers fixtures into $OUT/fixtures.tgz
#   2. runs the GPU op tests (every op vs the CPU backend; Gated DeltaNet)
#   3. runs every fixture on --backend cuda (tests/py/test_fixtures.py)
#   4. the opcode gate with SASS (no HMMA/HGMMA/IMMA/QGMMA)
#   5. dotlm_gpu_bench: sweep vs float64, copy bandwidth, peaks, GEMV/GEMM
#   6. end to end: random Qwen3-8B-shaped checkpoints, decode/prompt tok/s
# and prints a summary table last.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
B=/tmp/r
declare -a SUM
note() { SUM+=("$1"); echo ">> $1"; }

echo "== 1. fixtures (transformers on the CPU, fp32/fp64) =="
if timeout 150 python3 tools/gen_fixtures.py /tmp/fx > "$OUT/gen.log" 2>&1; then
  tar czf "$OUT/fixtures.tgz" -C /tmp/fx . && rm -rf fixtures && cp -r /tmp/fx fixtures
  note "fixtures: $(tail -1 "$OUT/gen.log")"
else
  note "fixtures: generator FAILED (see gen.log)"; tail -20 "$OUT/gen.log"
fi
grep -E "^qwen|^llama|FAILED" "$OUT/gen.log" | cut -c1-150

echo "== 2. GPU op tests =="
timeout 60 $B/test_gpu_ops > "$OUT/test_gpu_ops.log" 2>&1; note "test_gpu_ops: $(tail -1 "$OUT/test_gpu_ops.log")"
timeout 60 $B/test_gpu_gdn > "$OUT/test_gpu_gdn.log" 2>&1; note "test_gpu_gdn: $(tail -1 "$OUT/test_gpu_gdn.log")"
grep -iE "fail|max|err" "$OUT/test_gpu_gdn.log" | head -12

echo "== 3. fixtures on --backend cuda =="
DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 120 python3 tests/py/test_fixtures.py > "$OUT/fixtures_cuda.log" 2>&1
grep -E "max \|d\||FAIL|SKIP" "$OUT/fixtures_cuda.log" | cut -c1-160 | head -40
note "fixtures on cuda: $(tail -1 "$OUT/fixtures_cuda.log")"

echo "== 4. opcode gate (PTX + SASS) =="
timeout 60 tools/gpu_gate.sh --sass $B/dotlm_gpu_bench > "$OUT/gate.log" 2>&1; rc=$?
tail -5 "$OUT/gate.log"; note "gate rc=$rc: $(tail -1 "$OUT/gate.log")"

echo "== 5. GPU sweep + benchmarks =="
timeout 150 $B/dotlm_gpu_bench > "$OUT/bench.log" 2>&1; rc=$?
note "dotlm_gpu_bench rc=$rc"
tail -45 "$OUT/bench.log"

echo "== 6. end to end, Qwen3-8B shapes =="
for fmt in fp8-block bf16 int8; do
  d=/dev/shm/q8b-$fmt
  timeout 60 python3 tools/make_bench_model.py "$d" --preset qwen3-8b --format "$fmt" > /dev/null 2>&1 || { note "e2e $fmt: generation timed out"; continue; }
  for pl in 512 4096; do
    timeout 60 $B/dotlm bench --model "$d" --backend cuda --prompt-len $pl --gen 64 > "$OUT/e2e_${fmt}_$pl.log" 2>&1
    note "e2e $fmt P=$pl: $(grep -E "^prompt|^decode" "$OUT/e2e_${fmt}_$pl.log" | tr '\n' ' ')"
  done
  rm -rf "$d"
done

echo "================ summary ================"
for s in "${SUM[@]}"; do echo "$s"; done
