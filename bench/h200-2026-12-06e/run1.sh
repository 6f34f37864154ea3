#!/usr/bin/env bash
# (DOTLM_GEMV_OCC / DOTLM_I8_OCC were experiment variables of the builds
# 54e8763..2a2de07 only; main has the knobs occ / i8occ in DOTLM_GEMV.)
# session 45 call 1: the fp8 M = 1 ring with its blocks per SM capped by
# padded shared memory (experiment DOTLM_GEMV_OCC: -1 = ceil(grid / SMs),
# N = at most N per SM), against the default; GEMVs alone (x's twin, M = 1)
# and fp8 decode at 512, interleaved.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block
dv_gb occ0
DOTLM_GEMV_OCC=-1 dv_gb occauto
DOTLM_GEMV_OCC=6 dv_gb occ6
DOTLM_GEMV_OCC=5 dv_gb occ5
DOTLM_GEMV_OCC=-1 DOTLM_GEMV=default,xpf=1 dv_gb occauto_xpf1
dv_t
dv_models_wait
for r in 1 2; do
  dv_decode fp8-block
  echo -n "OCC=-1 "; DOTLM_GEMV_OCC=-1 dv_decode fp8-block
done
dv_gb_table occ0 occauto occ6 occ5 occauto_xpf1
dv_finish
