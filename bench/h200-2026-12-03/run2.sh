#!/usr/bin/env bash
# session 30 call 2: is bf16 decode at 512 at >= 80% of the floor run to
# run? The copy bandwidth (dotlm_gpu_bench), then bf16 decode at 512 six
# times, and at 1024 / 2048 twice, all in one call on one GPU
. bench/lib/device_prelude.sh
dv_init
dv_models bf16
timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_models_wait
for P in 512 512 512 1024 512 2048 512 512 1024 2048; do dv_decode bf16 --prompt-len $P --gen 64; done 2>&1 | sed 's/decode: 64 tokens in [0-9.]* s = //'
timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench2.log 2>&1; echo "gpu_bench (after) rc=$?"
dv_finish
grep -hE "copy D2D" $L/gpu_bench.log $L/gpu_bench2.log
