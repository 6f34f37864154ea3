#!/usr/bin/env bash
# session 42 call 6 (only on an H200): run5 cut to what the session's last
# device minutes allow: clocks and power through the GEMV bench and fp8 /
# bf16 decode of Qwen3-8B shapes, then Qwen3-14B-shaped fp8 decode.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || {
    echo "not an H200: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
    exit 0
}
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block bf16
dv_models --preset qwen3-14b fp8-block
dv_clocks_start
sleep 1
dv_phase gemv_bench start
DOTLM_GEMV_MS=1 timeout 90 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1
dv_phase gemv_bench end
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(bf16|fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-120
for f in fp8-block bf16; do
  dv_model_ready $f
  dv_phase "dec_$f" start; dv_decode $f --prompt-len 512 --gen 512; dv_phase "dec_$f" end
done
dv_models_wait
for round in 1 2; do echo -n "14b "; dv_decode fp8-block_14b; done
dv_clocks_table
grep -h streamed $L/dec_*.log | sort | uniq -c
dv_finish
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
