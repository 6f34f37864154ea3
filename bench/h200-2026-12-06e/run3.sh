#!/usr/bin/env bash
# session 45 call 3: the occupancy caps as GEMV knobs (occ: the fp8 M = 1
# ring, i8occ: the W8A8 M = 1 register GEMV; DOTLM_OCC_KEEP the shared
# memory left per SM, experiment): the GEMVs alone, decode at 512, then
# test_gpu_gemv_multi (the knobs' bits and counter) and test_gpu_forward +
# the fixtures with both caps at 6.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block int8
gb() { # label, environment via env
  DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 timeout 150 "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/gb_$1.log" 2>&1
  echo "gb $1 rc=$? $(grep -m1 'copy D2D' "$L/gb_$1.log" | tr -s ' ')"
}
gb dflt
DOTLM_GEMV=default,i8xp=0 gb i8xp0
DOTLM_GEMV=default,i8xp=0,occ=6,i8occ=6 gb occ6
DOTLM_GEMV=default,i8xp=0,occ=7,i8occ=7 gb occ7
DOTLM_OCC_KEEP=16384 DOTLM_GEMV=default,i8xp=0,occ=6,i8occ=6 gb occ6k
echo "== M=1 kernel %copy / late / plain / graph"
for f in dflt i8xp0 occ6 occ7 occ6k; do
  grep -E '^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 ' "$L/gb_$f.log" | awk -v f=$f '{printf "%-6s %-4s %-11s %7s %7s %7s %7s\n", f, $1, $3, $8, $9, $10, $11}'
done
dv_t
dv_models_wait
for r in 1 2; do
  dv_decode fp8-block
  DOTLM_GEMV=default,occ=6 dv_decode fp8-block
  echo -n "keep16K "; DOTLM_OCC_KEEP=16384 DOTLM_GEMV=default,occ=6 dv_decode fp8-block
  dv_decode int8
  DOTLM_GEMV=default,i8xp=0 dv_decode int8
  DOTLM_GEMV=default,i8xp=0,i8occ=6 dv_decode int8
done
dv_t
timeout 200 "$B/test_gpu_gemv_multi" >"$L/test_gpu_gemv_multi.log" 2>&1; echo "test_gpu_gemv_multi rc=$? $(tail -1 "$L/test_gpu_gemv_multi.log")"
grep -m5 FAIL "$L/test_gpu_gemv_multi.log"
DOTLM_GEMV=default,occ=6,i8occ=6 timeout 120 "$B/test_gpu_forward" >"$L/test_gpu_forward.log" 2>&1; echo "test_gpu_forward occ6 rc=$? $(tail -1 "$L/test_gpu_forward.log")"
DOTLM_GEMV=default,occ=6,i8occ=6 DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 120 python3 tests/py/test_fixtures.py >"$L/fixtures.log" 2>&1
echo "fixtures occ6 rc=$? $(tail -1 "$L/fixtures.log")"
dv_finish
