#!/usr/bin/env bash
# The one command the GPU test machine runs (NVIDIA; CUDA toolkit + GPU):
#
#   tools/gpu_test.sh [--build DIR] [--e2e] [--skip-ctest]
#
# 1. configure + build with -DDOTLM_CUDA=ON (Release)
# 2. ctest: every unit test (test_gpu_ops compares every GPU op to the CPU)
# 3. fixtures on --backend cuda (tests/py/test_fixtures.py, DOTLM_BACKEND=cuda)
# 4. opcode gate: PTX + (if hipcc is present) gfx906 + SASS of the built binary
# 5. dotlm_gpu_bench: numeric sweep vs float64, copy bandwidth, peaks,
#    decode GEMV and prefill GEMM tables (< 3 min on an H200)
# 6. --e2e: random Qwen3-8B-shaped checkpoints (bf16, fp8-block, int8) with
#    tools/make_bench_model.py, `dotlm bench --model` decode/prompt tok/s
# Logs go to DIR/gpu_test/; a summary table is printed last. Exit 1 if any
# step failed.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B="$ROOT/build-cuda"
E2E=0 CTEST=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) B=$2; shift ;;
    --e2e) E2E=1 ;;
    --skip-ctest) CTEST=0 ;;
    *) echo "usage: $0 [--build DIR] [--e2e] [--skip-ctest]" >&2; exit 2 ;;
  esac
  shift
done
cd "$ROOT"
L="$B/gpu_test"
mkdir -p "$L"
declare -a NAMES STATUS
step() { NAMES+=("$1"); STATUS+=("$2"); }
J=$(nproc 2>/dev/null || echo 4)

echo "== device =="
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee "$L/device.txt"
nvcc --version | tail -1

echo "== build =="
if cmake -S . -B "$B" -DDOTLM_CUDA=ON -DCMAKE_BUILD_TYPE=Release > "$L/configure.log" 2>&1 &&
   cmake --build "$B" -j"$J" > "$L/build.log" 2>&1; then
  step build PASS
else
  tail -40 "$L/configure.log" "$L/build.log"
  step build FAIL
  printf '%-12s %s\n' build FAIL
  exit 1
fi

if [ $CTEST = 1 ]; then
  echo "== ctest =="
  ctest --test-dir "$B" --output-on-failure -j4 > "$L/ctest.log" 2>&1
  rc=$?
  grep -E "tests passed|tests failed|Failed|\*\*\*" "$L/ctest.log" | tail -20
  echo "-- test_gpu_ops:"; "$B/test_gpu_ops" 2>&1 | tail -3 | tee "$L/test_gpu_ops.log"
  [ $rc = 0 ] && step ctest PASS || step ctest FAIL
  echo "== fixtures on --backend cuda =="
  DOTLM_BACKEND=cuda DOTLM_BIN="$B/dotlm" python3 tests/py/test_fixtures.py > "$L/fixtures.log" 2>&1
  rc=$?
  tail -15 "$L/fixtures.log"
  [ $rc = 0 ] && step fixtures-cuda PASS || step fixtures-cuda FAIL
fi

echo "== opcode gate =="
tools/gpu_gate.sh --sass "$B/dotlm_gpu_bench" > "$L/gate.log" 2>&1
rc=$?
grep -E "FAIL|==|gpu_gate" "$L/gate.log" | head -40
[ $rc = 0 ] && step gate PASS || step gate FAIL

echo "== GPU numeric sweep + benchmarks =="
timeout 600 "$B/dotlm_gpu_bench" > "$L/bench.log" 2>&1
rc=$?
grep -E "FAIL|did not run" "$L/bench.log" | head -20
[ $rc = 0 ] && step sweep+bench PASS || step sweep+bench FAIL

if [ $E2E = 1 ]; then
  echo "== end to end (Qwen3-8B shapes, random weights) =="
  for fmt in bf16 fp8-block int8; do
    d="$B/bench_models/qwen3-8b-$fmt"
    [ -f "$d/config.json" ] || python3 tools/make_bench_model.py "$d" --preset qwen3-8b --format $fmt > "$L/make_$fmt.log" 2>&1
    for p in 512 4096; do
      "$B/dotlm" bench --model "$d" --backend cuda --prompt-len $p --gen 64 > "$L/e2e_${fmt}_$p.log" 2>&1 \
        && step "e2e $fmt p$p" PASS || step "e2e $fmt p$p" FAIL
      tail -5 "$L/e2e_${fmt}_$p.log"
    done
  done
fi

echo
sed -n '/== peaks/,$p' "$L/bench.log"
echo
echo "== summary (logs in $L) =="
ANY=0
for i in "${!NAMES[@]}"; do
  printf '%-18s %s\n' "${NAMES[$i]}" "${STATUS[$i]}"
  [ "${STATUS[$i]}" = PASS ] || ANY=1
done
exit $ANY
