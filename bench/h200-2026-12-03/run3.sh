#!/usr/bin/env bash
# session 30 call 3: where bf16's decode step goes today (last measured in
# the fourteenth session, on older code): DOTLM_GPU_DIAG_SKIP groups at 512,
# each against the full step in the same call (every output is wrong with
# a skip; these are costs, not results)
. bench/lib/device_prelude.sh
dv_init
dv_models bf16
timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_models_wait
for s in "" norm qkrope "attn,combine" attnwork combine "" matmul:6144x4096 matmul:4096x4096 matmul:24576x4096 matmul:4096x12288 matmul:151936x4096 matmul "norm,qkrope,attn,combine" ""; do
  DOTLM_GPU_DIAG_SKIP=$s dv_decode bf16 --prompt-len 512 --gen 64
done 2>&1 | sed 's/decode: 64 tokens in [0-9.]* s = //'
dv_finish
grep -hE "copy D2D" $L/gpu_bench.log
