#!/usr/bin/env bash
# (DOTLM_GEMV_OCC / DOTLM_I8_OCC were experiment variables of the builds
# 54e8763..2a2de07 only; main has the knobs occ / i8occ in DOTLM_GEMV.)
# session 45 call 2: blocks per SM capped by padded shared memory for the
# fp8 M = 1 ring (DOTLM_GEMV_OCC=N) and the W8A8 M = 1 register GEMV
# (DOTLM_I8_OCC=N, with i8xp=0), against the defaults: the GEMVs alone (x's
# twin, M = 1) and decode at 512, interleaved.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block int8
dv_gb dflt
DOTLM_GEMV=default,i8xp=0 dv_gb i8xp0
DOTLM_GEMV_OCC=6 DOTLM_I8_OCC=6 DOTLM_GEMV=default,i8xp=0 dv_gb occ6
DOTLM_GEMV_OCC=7 DOTLM_I8_OCC=7 DOTLM_GEMV=default,i8xp=0 dv_gb occ7
DOTLM_OCC_KEEP=16384 DOTLM_GEMV_OCC=6 DOTLM_I8_OCC=6 DOTLM_GEMV=default,i8xp=0 dv_gb occ6k
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
dv_gb_table dflt i8xp0 occ6 occ7 occ6k
dv_finish
