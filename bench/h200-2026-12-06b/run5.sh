#!/usr/bin/env bash
# session 42 call 5 (only on an H200 unless DV_ANY_GPU=1): do the SM clocks drop while the fp8
# GEMVs run? At the H200's copy rate the fp8 M = 1 ring needs about 0.64
# instructions per scheduler-cycle at 1980 MHz (326 SASS per 64 weight
# bytes of a lane; ncu measured 0.43-0.61 issued), bf16 about a third, so
# a power-capped clock would show in fp8 and not in bf16. Clocks and
# power sampled every 50 ms through the GEMV bench and long decodes of each
# format; then Qwen3-14B-shaped decode (fp8, W8A8), never run on an H200.
[ -n "${DV_ANY_GPU:-}" ] || nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || {
    echo "not an H200: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
    exit 0
}
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8 bf16
dv_models --preset qwen3-14b fp8-block int8
dv_clocks_start
sleep 1
dv_phase idle start; sleep 1; dv_phase idle end
dv_phase gemv_bench start
DOTLM_GEMV_MS=1 timeout 90 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1
dv_phase gemv_bench end
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(bf16|fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-120
for f in fp8-block int8 bf16; do
  dv_model_ready $f
  dv_phase "dec_$f" start; dv_decode $f --prompt-len 512 --gen 512; dv_phase "dec_$f" end
done
dv_phase "dec_fp8-block_b" start; dv_decode fp8-block --prompt-len 512 --gen 512; dv_phase "dec_fp8-block_b" end
dv_models_wait
echo "$(dv_t) $(tail -1 $L/gen_fp8-block_14b.log) / $(tail -1 $L/gen_int8_14b.log)"
dv_decode_rounds "14b " 2 fp8-block_14b int8_14b
dv_clocks_table
grep -h streamed $L/dec_*.log | sort | uniq -c
dv_finish
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
