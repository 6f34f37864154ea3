#!/usr/bin/env bash
# session 45 call 1: the fp8 M = 1 ring with its blocks per SM capped by
# padded shared memory (experiment DOTLM_GEMV_OCC: -1 = ceil(grid / SMs),
# N = at most N per SM), against the default; GEMVs alone (x's twin, M = 1)
# and fp8 decode at 512, interleaved.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block
gb() { # label, environment via env
  DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 timeout 150 "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/gb_$1.log" 2>&1
  echo "gb $1 rc=$? $(grep -m1 'copy D2D' "$L/gb_$1.log" | tr -s ' ') $(grep -m1 OCC "$L/gb_$1.log")"
}
gb occ0
DOTLM_GEMV_OCC=-1 gb occauto
DOTLM_GEMV_OCC=6 gb occ6
DOTLM_GEMV_OCC=5 gb occ5
DOTLM_GEMV_OCC=-1 DOTLM_GEMV=default,xpf=1 gb occauto_xpf1
dv_t
dv_models_wait
for r in 1 2; do
  dv_decode fp8-block
  echo -n "OCC=-1 "; DOTLM_GEMV_OCC=-1 dv_decode fp8-block
done
echo "== fp8 M=1: kernel %copy / late / plain / graph"
for f in occ0 occauto occ6 occ5 occauto_xpf1; do
  grep -E '^fp8 block +[0-9]+x[0-9]+ +1 ' "$L/gb_$f.log" | awk -v f=$f '{printf "%-13s %-11s %7s %7s %7s %7s\n", f, $3, $8, $9, $10, $11}'
done
dv_finish
