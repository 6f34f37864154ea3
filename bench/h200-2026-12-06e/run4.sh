#!/usr/bin/env bash
# session 45 call 4: the occupancy caps after two fixes (the shared-memory
# limit raised per kernel, not per signature: occ=2 failed to launch in
# run3; the cap only for grids of at most occ blocks per SM, so gate/up
# stays uncapped in decode): test_gpu_gemv_multi and the GEMVs alone
# (decode left out: the session's device time was nearly spent).
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 200 "$B/test_gpu_gemv_multi" >"$L/test_gpu_gemv_multi.log" 2>&1; echo "test_gpu_gemv_multi rc=$? $(tail -1 "$L/test_gpu_gemv_multi.log")"
grep -m3 'FAIL' "$L/test_gpu_gemv_multi.log"
gb() { # label, environment via env
  DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 timeout 150 "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/gb_$1.log" 2>&1
  echo "gb $1 rc=$? $(grep -m1 'copy D2D' "$L/gb_$1.log" | tr -s ' ')"
}
gb dflt
DOTLM_GEMV=default,occ=6,i8occ=6 gb occ6
for f in dflt occ6; do
  grep -E '^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 ' "$L/gb_$f.log" | awk -v f=$f '{printf "%-6s %-4s %-11s %7s %7s %7s %7s\n", f, $1, $3, $8, $9, $10, $11}'
done
dv_finish
