#!/usr/bin/env bash
# session 41 call 3: decode of Qwen3-14B shapes (every GEMV weight of the
# #4 shapes: 5120x17408, 17408x5120, 6144x5120 within q/k/v 7168x5120) in
# fp8 block and W8A8; W8A8 with i8xp 0 / 2, interleaved (the H100 in run1
# had i8xp=2 0.4-0.8% slower). Cut down to the 14B models when the device
# time left was short.
. bench/lib/device_prelude.sh
dv_init
dv_models --preset qwen3-14b int8 fp8-block
# the copy bandwidth is printed first; the rest of the bench is cut off
timeout 25 stdbuf -oL $B/dotlm_gpu_bench --no-sweep --quick > $L/peaks.log 2>&1 || true
dv_models_wait
echo "$(dv_t) $(tail -1 $L/gen_int8_14b.log) / $(tail -1 $L/gen_fp8-block_14b.log)"
for round in 1 2; do
  for x in 0 2; do echo -n "14b i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8_14b; done
  echo -n "14b "; dv_decode fp8-block_14b
done
echo -n "14b "; dv_decode fp8-block_14b --prompt-len 4096 --gen 32
echo -n "14b "; dv_decode int8_14b --prompt-len 4096 --gen 32
grep -h streamed $L/dec_*.log | sort | uniq -c
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D" $L/peaks.log
