#!/usr/bin/env bash
# session 29 call 6: what the decode attention costs in place today (fp8 at
# 512 and 1024, DOTLM_GPU_DIAG_SKIP), to compare with the chain lab's
# attention shapes (run5); run3's pack (main + the i8u=8 knob value)
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
dv_models_wait
for P in 512 1024; do
  for i in 1 2; do
    dv_decode fp8-block --prompt-len $P --gen 64
    DOTLM_GPU_DIAG_SKIP=attn,combine dv_decode fp8-block --prompt-len $P --gen 64
    DOTLM_GPU_DIAG_SKIP=attnwork dv_decode fp8-block --prompt-len $P --gen 64
    DOTLM_GPU_DIAG_SKIP=combine dv_decode fp8-block --prompt-len $P --gen 64
  done
done 2>&1 | sed 's/^/  /'
dv_finish
