#!/usr/bin/env bash
# session 45 call 4 (not run: the session's device time ran out): the
# occupancy caps after two fixes (the shared-memory limit raised per
# kernel, not per signature: occ=2 failed to launch in run3; caps only for
# grids of at most occ blocks per SM, so gate/up stays uncapped in
# decode): test_gpu_gemv_multi, the GEMVs alone, decode at 512
# interleaved (fp8 with occ=6; W8A8 with i8xp=0 and i8occ=6 against both
# i8xp settings).
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block int8
timeout 200 "$B/test_gpu_gemv_multi" >"$L/test_gpu_gemv_multi.log" 2>&1; echo "test_gpu_gemv_multi rc=$? $(tail -1 "$L/test_gpu_gemv_multi.log")"
grep -m3 'FAIL' "$L/test_gpu_gemv_multi.log"
dv_gb dflt
DOTLM_GEMV=default,occ=6,i8occ=6,i8xp=0 dv_gb occ6
dv_gb_table dflt occ6
dv_models_wait
for r in 1 2; do
  dv_decode fp8-block
  DOTLM_GEMV=default,occ=6 dv_decode fp8-block
  DOTLM_GEMV=default,i8xp=0 dv_decode int8
  DOTLM_GEMV=default,i8xp=1 dv_decode int8
  DOTLM_GEMV=default,i8xp=0,i8occ=6 dv_decode int8
done
dv_finish
