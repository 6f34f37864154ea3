#!/usr/bin/env bash
# The one command the GPU test machine runs (NVIDIA; CUDA toolkit + GPU):
#
#   tools/gpu_test.sh [--build DIR] [--e2e] [--skip-ctest]
#
# 1. configure + build with -DDOTLM_CUDA=ON (Release); without the
#    server/tokenizer -dev packages, a minimal build of the GPU test + bench
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

# Minimal build without CMake: only the libraries the GPU test and bench
# need (core, quant, backend, cpu, gpu). Used when the machine lacks the
# server/tokenizer -dev packages (jansson, PCRE2, utf8proc, microhttpd), as
# the H200 image seen on 2026-11-30 does.
mini_build() {
  local O="$B/mini" arch=${CUDA_ARCH:-90}
  mkdir -p "$O/obj"
  : > "$O/cmds.txt"
  for f in src/core/*.c src/quant/*.c src/backend/*.c src/backend/cpu/*.c src/backend/gpu/*.c; do
    case $f in *_bench.c) continue ;; esac
    echo "gcc -std=c11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -DDOTLM_CUDA=1 -Isrc -c $f -o $O/obj/$(echo $f | tr / _).o" >> "$O/cmds.txt"
  done
  for f in src/backend/gpu/*.cu; do
    echo "nvcc -std=c++17 -O3 -lineinfo -gencode arch=compute_$arch,code=sm_$arch -Isrc -c $f -o $O/obj/$(echo $f | tr / _).o" >> "$O/cmds.txt"
  done
  xargs -P "$J" -I{} sh -c "{}" < "$O/cmds.txt" || return 1
  rm -f "$O/libdl.a" && ar rcs "$O/libdl.a" "$O"/obj/*.o || return 1
  local CL; CL=$(dirname "$(command -v nvcc)")/../lib64
  for t in tests/test_gpu_*.c; do
    case $t in *test_gpu_forward.c) continue ;; esac # loads checkpoints: needs io (jansson)
    gcc -std=c11 -O2 -D_GNU_SOURCE -DDOTLM_CUDA=1 -Isrc -Itests "$t" tests/testutil.c "$O/libdl.a" \
        -L"$CL" -lcudart -lstdc++ -lpthread -lm -o "$B/$(basename "$t" .c)" || return 1
  done
  gcc -std=c11 -O2 -D_GNU_SOURCE -DDOTLM_CUDA=1 -Isrc src/backend/gpu/gpu_bench.c "$O/libdl.a" \
      -L"$CL" -lcudart -lstdc++ -lpthread -lm -o "$B/dotlm_gpu_bench"
}

echo "== build =="
MINI=${GPU_TEST_MINI:-0} # GPU_TEST_MINI=1 forces the minimal build
for p in jansson libpcre2-8 libutf8proc libmicrohttpd; do pkg-config --exists $p 2>/dev/null || MINI=1; done
if [ $MINI = 1 ]; then
  echo "(jansson/PCRE2/utf8proc/microhttpd -dev missing: minimal build of test_gpu_ops + dotlm_gpu_bench;"
  echo " ctest and the fixtures need the full build and are skipped)"
  mkdir -p "$B"
  if mini_build > "$L/build.log" 2>&1; then step build-minimal PASS; else tail -40 "$L/build.log"; step build-minimal FAIL; printf '%-18s %s\n' build FAIL; exit 1; fi
  CTEST=0
  for t in tests/test_gpu_*.c; do
    n=$(basename "$t" .c)
    [ -x "$B/$n" ] || { echo "== $n: needs the full build (tools/pack_device.sh + tools/device_check.sh tests) =="; continue; }
    echo "== $n =="
    "$B/$n" > "$L/$n.log" 2>&1
    rc=$?
    tail -3 "$L/$n.log"
    [ $rc = 0 ] && step "$n" PASS || step "$n" FAIL
  done
elif cmake -S . -B "$B" -DDOTLM_CUDA=ON -DCMAKE_BUILD_TYPE=Release > "$L/configure.log" 2>&1 &&
   cmake --build "$B" -j"$J" > "$L/build.log" 2>&1; then
  step build PASS
else
  tail -40 "$L/configure.log" "$L/build.log"
  step build FAIL
  printf '%-18s %s\n' build FAIL
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

if [ $E2E = 1 ] && [ $MINI = 0 ]; then
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
