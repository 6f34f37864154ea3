#!/usr/bin/env bash
# session 42 call 1: decode of Qwen3-14B shapes (the #4 GEMV shapes) in fp8
# block and W8A8 at 512 and after 4096 positions on the machine that comes
# (the forty-first session ran them on H100s only), and Qwen3-8B W8A8 with
# i8xp 0 / 2 interleaved (i8xp=2 had decoded on an H100 only). The build is
# main's; no CUDA source changed since the forty-first session's runs.
. bench/lib/device_prelude.sh
dv_init
dv_models int8
dv_models --preset qwen3-14b fp8-block int8
# the copy bandwidth is printed first; the rest of the bench is cut off
timeout 25 stdbuf -oL $B/dotlm_gpu_bench --no-sweep --quick > $L/peaks.log 2>&1 || true
grep -E "copy D2D" $L/peaks.log
dv_model_ready int8
echo "$(dv_t) $(tail -1 $L/gen_int8.log)"
for round in 1 2 3; do
  for x in 0 2; do echo -n "i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8; done
done
dv_models_wait
echo "$(dv_t) $(tail -1 $L/gen_fp8-block_14b.log) / $(tail -1 $L/gen_int8_14b.log)"
dv_decode_rounds "14b " 2 fp8-block_14b int8_14b
grep -h streamed $L/dec_*.log | sort | uniq -c
dv_finish
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
