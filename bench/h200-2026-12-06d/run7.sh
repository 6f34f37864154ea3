#!/usr/bin/env bash
# session 44 call 7 (only on an H200): the Qwen3-14B-shaped fp8 and W8A8
# models, whose GEMVs are the #4 shapes, never decoded on an H200 yet;
# two rounds at 512, then after 4096. The build of run6 (i8xp by device).
. bench/lib/device_prelude.sh
dv_only_on H200
dv_init
dv_models --preset qwen3-14b fp8-block int8
dv_model_ready fp8-block_14b
for r in 1 2; do echo -n "14b "; dv_decode fp8-block_14b; done
dv_models_wait
for r in 1 2; do echo -n "14b "; dv_decode int8_14b; done
echo -n "14b "; DOTLM_GEMV=default,i8xp=0 dv_decode int8_14b
echo -n "14b "; dv_decode fp8-block_14b --prompt-len 4096 --gen 32
echo -n "14b "; dv_decode int8_14b --prompt-len 4096 --gen 32
grep -h streamed $L/dec_*.log | sort | uniq -c
grep -m1 "weights in" $L/dec_int8_14b.*.log | head -1
dv_finish
