#!/usr/bin/env bash
# The GPU test machine's run when its image lacks dotlm's C libraries
# (jansson, PCRE2, utf8proc, libmicrohttpd): binaries are built on the dev
# machine by tools/pack_device.sh (-> .devpack/devrun.tar.xz, with those
# .so files; carry `.devpack`), and this script runs the selected steps,
# each time-boxed, printing a summary table last:
#
#   tools/device_check.sh [STEPS]     STEPS: comma list, default all of
#     tests     GPU unit tests (ops vs CPU, Gated DeltaNet, whole-model fast
#               paths vs eager/unfused, multi-weight GEMV)
#     fixtures  every transformers fixture on --backend cuda
#     gate      opcode gate with SASS (no HMMA/HGMMA/IMMA/QGMMA)
#     bench     dotlm_gpu_bench: sweep vs float64, copy bandwidth, peaks, GEMV/GEMM
#     e2e       random Qwen3-8B-shaped checkpoints (fp8-block, int8, bf16):
#               prompt/decode tok/s at 512 and 4096, and at 512 with PDL off
#     ncu       (with e2e) Nsight Compute device time of each kernel of one
#               fp8 decode step (kernels serialised: no PDL overlap)
#     prof      (with e2e) DOTLM_GPU_PROFILE=1 decode runs (fp8, int8)
#     hybrid    random Qwen3.5-27B-shaped FP8 checkpoint: decode, prompt 4096, profile
#     server    dotlm serve --backend cuda + bench/loadgen.py at concurrency 1, 8, 32
#     fxgen     regenerate the transformers fixtures into $OUT/fixtures.tgz
set -u
OUT=${OUT:-/tmp/out}
STEPS=${1:-tests,fixtures,gate,bench,e2e,hybrid,server}
mkdir -p "$OUT" /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
B=/tmp/r
declare -a SUM
note() { SUM+=("$1"); echo ">> $1"; }
want() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | head -1

if want fxgen; then
  echo "== fixtures generation (transformers on the CPU, fp32/fp64) =="
  if timeout 150 python3 tools/gen_fixtures.py /tmp/fx > "$OUT/gen.log" 2>&1; then
    tar czf "$OUT/fixtures.tgz" -C /tmp/fx . && note "fixtures: $(tail -1 "$OUT/gen.log")"
  else note "fixtures: generator FAILED (see gen.log)"; fi
fi

if want tests; then
  echo "== GPU unit tests =="
  for t in test_gpu_ops test_gpu_gdn test_gpu_forward test_gpu_gemv_multi; do
    [ -x $B/$t ] || { note "$t: not in the pack"; continue; }
    timeout 120 $B/$t > "$OUT/$t.log" 2>&1; rc=$?
    note "$t rc=$rc: $(tail -1 "$OUT/$t.log")"
    grep -E "CHECK failed|FAIL" "$OUT/$t.log" | head -8
  done
fi

if want fixtures; then
  echo "== fixtures on --backend cuda =="
  DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 240 python3 tests/py/test_fixtures.py > "$OUT/fixtures_cuda.log" 2>&1
  grep -E "max \|d\||FAIL|SKIP|NOTE" "$OUT/fixtures_cuda.log" | cut -c1-150 | head -60
  note "fixtures on cuda: $(tail -1 "$OUT/fixtures_cuda.log")"
fi

if want gate; then
  echo "== opcode gate (PTX + SASS) =="
  timeout ${GATE_TIMEOUT:-480} tools/gpu_gate.sh --sass $B/dotlm_gpu_bench > "$OUT/gate.log" 2>&1; rc=$?
  tail -4 "$OUT/gate.log"; note "gate rc=$rc: $(tail -1 "$OUT/gate.log")"
fi

if want bench; then
  echo "== GPU sweep + benchmarks =="
  DOTLM_GEMV_VARIANTS=${DOTLM_GEMV_VARIANTS:-all} timeout 240 $B/dotlm_gpu_bench > "$OUT/bench.log" 2>&1; rc=$?
  note "dotlm_gpu_bench rc=$rc"
  grep -E "sweep|FAIL" "$OUT/bench.log" | head -5
  sed -n '/copy bandwidth\|== decode GEMV/,$p' "$OUT/bench.log" | head -90
fi

e2e() { # dir label plen
  timeout 120 $B/dotlm bench --model "$1" --backend cuda --prompt-len "$3" --gen 64 ${4:-} > "$OUT/e2e_$2_$3.log" 2>&1
  note "e2e $2 P=$3 ${4:-}: $(grep -E "^prompt|^decode|decode at" "$OUT/e2e_$2_$3.log" | sed 's/floor:.*decode at/floor/' | tr '\n' ' ' | cut -c1-220)"
}

if want e2e; then
  echo "== end to end, Qwen3-8B shapes =="
  for fmt in ${E2E_FORMATS:-fp8-block int8 bf16}; do
    d=/dev/shm/q8b-$fmt
    timeout 150 python3 tools/make_bench_model.py "$d" --preset qwen3-8b --format "$fmt" > /dev/null 2>&1 || { note "e2e $fmt: generation failed/timed out"; continue; }
    e2e "$d" "$fmt" 512
    DOTLM_DISABLE=cuda.pdl e2e "$d" "$fmt-nopdl" 512
    # E2E_VARIANTS="label:VAR=v VAR2=w;label2:..." adds a decode run at 512 per entry
    IFS=';' read -ra evs <<< "${E2E_VARIANTS:-}"
    for ev in "${evs[@]}"; do
      [ -n "$ev" ] || continue
      env ${ev#*:} bash -c "$(declare -f e2e note); B=$B OUT=$OUT; e2e '$d' '$fmt-${ev%%:*}' 512" | grep '^>>'
    done
    [ -n "${E2E_SHORT:-}" ] || e2e "$d" "$fmt" 4096
    if [ "$fmt" = fp8-block ] && want ncu; then
      NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      # one decode step is ~330 launches; skip the prompt and the first steps
      timeout 150 "$NCU" --clock-control none --metrics gpu__time_duration.sum --launch-skip 1400 --launch-count 340 \
        --csv $B/dotlm bench --model "$d" --backend cuda --prompt-len 16 --gen 8 > "$OUT/ncu_fp8.log" 2>&1
      python3 tools/ncu_table.py "$OUT/ncu_fp8.log" | tee "$OUT/ncu_fp8_table.log" | head -30
    fi
    if [ "$fmt" = fp8-block ] && want prof; then
      DOTLM_DISABLE=cuda.graph e2e "$d" "$fmt-nograph" 512
      DOTLM_GPU_PROFILE=1 timeout 120 $B/dotlm bench --model "$d" --backend cuda --prompt-len 512 --gen 32 > "$OUT/prof_fp8.log" 2>&1
      sed -n '/GPU profile/,$p' "$OUT/prof_fp8.log" | head -30
    fi
    if [ "$fmt" = int8 ] && want prof; then
      DOTLM_GPU_PROFILE=1 timeout 120 $B/dotlm bench --model "$d" --backend cuda --prompt-len 512 --gen 32 > "$OUT/prof_int8.log" 2>&1
      sed -n '/GPU profile/,$p' "$OUT/prof_int8.log" | head -24
    fi
    [ "$fmt" = fp8-block ] && want server && cp -r "$d" /dev/shm/q8b-server
    rm -rf "$d"
  done
fi

if want hybrid; then
  echo "== Qwen3.5-27B shapes, FP8 block =="
  d=/dev/shm/q27
  if timeout 240 python3 tools/make_bench_model.py "$d" --preset qwen3.5-27b --format fp8-block > "$OUT/gen27.log" 2>&1; then
    if [ -z "${HYB_PROFILE_ONLY:-}" ]; then
      timeout 150 $B/dotlm bench --model "$d" --backend cuda --prompt-len 4096 --gen 32 > "$OUT/e2e_27b.log" 2>&1
      note "27B fp8: $(grep -E "^prompt|^decode|decode at" "$OUT/e2e_27b.log" | tr '\n' ' ' | cut -c1-260)"
    fi
    DOTLM_GPU_PROFILE=1 timeout 150 $B/dotlm bench --model "$d" --backend cuda --prompt-len 64 --gen 32 > "$OUT/prof_27b.log" 2>&1
    sed -n '/GPU profile/,$p' "$OUT/prof_27b.log" | head -34
  else note "27B: generation failed: $(tail -2 "$OUT/gen27.log")"; fi
  rm -rf "$d"
fi

if want server; then
  echo "== server on the GPU =="
  d=/dev/shm/q8b-server
  if [ ! -d "$d" ]; then timeout 150 python3 tools/make_bench_model.py "$d" --preset qwen3-8b --format fp8-block > /dev/null 2>&1; fi
  cp assets/tokenizers/qwen3/* "$d/" 2>/dev/null
  $B/dotlm serve "$d" --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > "$OUT/serve.log" 2>&1 &
  sp=$!
  for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
  timeout 200 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 1,8,32 --duration 20 \
      --max-tokens 128 --markdown > "$OUT/loadgen.log" 2>&1
  cat "$OUT/loadgen.log" | tail -12
  kill -INT $sp; wait $sp
  note "server: $(grep -cE '^\|' "$OUT/loadgen.log") table lines (loadgen.log)"
  rm -rf "$d"
fi

# logs in one archive (the machine returns at most 8 files)
tar czf "$OUT/logs.tgz" -C "$OUT" $(cd "$OUT" && ls *.log 2>/dev/null) 2>/dev/null && rm -f "$OUT"/*.log
echo "================ summary ================"
for s in "${SUM[@]}"; do echo "$s"; done
