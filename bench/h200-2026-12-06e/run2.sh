#!/usr/bin/env bash
# session 45 call 2: blocks per SM capped by padded shared memory for the
# fp8 M = 1 ring (DOTLM_GEMV_OCC=N) and the W8A8 M = 1 register GEMV
# (DOTLM_I8_OCC=N, with i8xp=0), against the defaults: the GEMVs alone (x's
# twin, M = 1) and decode at 512, interleaved.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block int8
gb() { # label, environment via env
  DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 timeout 150 "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/gb_$1.log" 2>&1
  echo "gb $1 rc=$? $(grep -m1 'copy D2D' "$L/gb_$1.log" | tr -s ' ') | $(grep occupancy "$L/gb_$1.log" | tr '\n' '|')"
}
gb dflt
DOTLM_GEMV=default,i8xp=0 gb i8xp0
DOTLM_GEMV_OCC=6 DOTLM_I8_OCC=6 DOTLM_GEMV=default,i8xp=0 gb occ6
DOTLM_GEMV_OCC=7 DOTLM_I8_OCC=7 DOTLM_GEMV=default,i8xp=0 gb occ7
DOTLM_OCC_KEEP=16384 DOTLM_GEMV_OCC=6 DOTLM_I8_OCC=6 DOTLM_GEMV=default,i8xp=0 gb occ6k
dv_t
dv_models_wait
for r in 1 2; do
  dv_decode fp8-block
  echo -n "GEMV_OCC=6 "; DOTLM_GEMV_OCC=6 dv_decode fp8-block
  echo -n "GEMV_OCC=6 keep 16K "; DOTLM_OCC_KEEP=16384 DOTLM_GEMV_OCC=6 dv_decode fp8-block
done
for r in 1 2; do
  dv_decode int8
  DOTLM_GEMV=default,i8xp=0 dv_decode int8
  echo -n "I8_OCC=6 "; DOTLM_I8_OCC=6 DOTLM_GEMV=default,i8xp=0 dv_decode int8
  echo -n "I8_OCC=6 keep 16K "; DOTLM_OCC_KEEP=16384 DOTLM_I8_OCC=6 DOTLM_GEMV=default,i8xp=0 dv_decode int8
done
echo "== M=1 kernel %copy / late / plain / graph"
for f in dflt i8xp0 occ6 occ7 occ6k; do
  grep -E '^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 ' "$L/gb_$f.log" | awk -v f=$f '{printf "%-6s %-4s %-11s %7s %7s %7s %7s\n", f, $1, $3, $8, $9, $10, $11}'
done
dv_finish
