#!/usr/bin/env bash
# session 45 call 3: the occupancy caps as GEMV knobs (occ: the fp8 M = 1
# ring, i8occ: the W8A8 M = 1 register GEMV; DOTLM_OCC_KEEP the shared
# memory left per SM, experiment): the GEMVs alone, fp8 decode at 512,
# then every GPU test (test_gpu_gemv_multi: the knobs' bits and counter)
# and the fixtures.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block
gb() { # label, environment via env
  DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 timeout 150 "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/gb_$1.log" 2>&1
  echo "gb $1 rc=$? $(grep -m1 'copy D2D' "$L/gb_$1.log" | tr -s ' ')"
}
gb dflt
DOTLM_GEMV=default,i8xp=0 gb i8xp0
DOTLM_GEMV=default,i8xp=0,occ=6,i8occ=6 gb occ6
DOTLM_OCC_KEEP=16384 DOTLM_GEMV=default,i8xp=0,occ=6,i8occ=6 gb occ6k
echo "== M=1 kernel %copy / late / plain / graph"
for f in dflt i8xp0 occ6 occ6k; do
  grep -E '^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 ' "$L/gb_$f.log" | awk -v f=$f '{printf "%-6s %-4s %-11s %7s %7s %7s %7s\n", f, $1, $3, $8, $9, $10, $11}'
done
dv_t
dv_tests
grep -m5 FAIL "$L/test_gpu_gemv_multi.log"
dv_t
dv_models_wait
dv_decode fp8-block
DOTLM_GEMV=default,occ=6 dv_decode fp8-block
echo -n "keep16K "; DOTLM_OCC_KEEP=16384 DOTLM_GEMV=default,occ=6 dv_decode fp8-block
dv_decode fp8-block
DOTLM_GEMV=default,occ=6 dv_decode fp8-block
dv_finish
