#!/usr/bin/env bash
# session 44 call 5 (the same warm H200): decode at 512 with the knobs that
# raised the fp8 GEMV alone in run4 or in its late column: the late PDL
# trigger (DOTLM_GEMV_TRIG=late), the second register set (xpf=1), fp8=hf,
# and W8A8 with the late trigger and i8xp=1; two interleaved rounds.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
for r in 1 2; do
  dv_decode fp8-block
  echo -n "TRIG=late "; DOTLM_GEMV_TRIG=late dv_decode fp8-block
  DOTLM_GEMV=default,xpf=1 dv_decode fp8-block
  DOTLM_GEMV=default,fp8=hf dv_decode fp8-block
  echo -n "TRIG=late "; DOTLM_GEMV_TRIG=late DOTLM_GEMV=default,fp8=hf dv_decode fp8-block
  dv_decode int8
  echo -n "TRIG=late "; DOTLM_GEMV_TRIG=late dv_decode int8
  DOTLM_GEMV=default,i8xp=1 dv_decode int8
done
dv_finish
