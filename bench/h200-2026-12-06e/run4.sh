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
dv_gb dflt
DOTLM_GEMV=default,occ=6,i8occ=6 dv_gb occ6
dv_gb_table dflt occ6
dv_finish
