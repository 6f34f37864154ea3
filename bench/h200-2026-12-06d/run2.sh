#!/usr/bin/env bash
# session 44 call 2: clocks and power under load. run1 put the H100 at an
# H200's bytes per second per SM (DOTLM_GPU_SMS=96) and the fp8 GEMV still
# streamed at 85-91% of the copy bandwidth (the H200: 65-82%), so the
# H200's deficit is not the per-SM instruction rate at full clock. Left:
# the H200's SM clock under load (a power cap) or its memory system. Here,
# sampled every 50 ms: long decodes (1024 tokens after 512) per format and
# fp8 variant (fold, hf, the register loop), on whichever GPU comes; on an
# H200 also the M = 1 GEMVs default / hf / i8xp=1 as phases of their own.
. bench/lib/device_prelude.sh
dv_init
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "gpu: $gpu; power limit $(nvidia-smi --query-gpu=power.limit,clocks.max.sm --format=csv,noheader)"
dv_models fp8-block int8 bf16
dv_clocks_start
sleep 1
dv_phase idle start; sleep 1; dv_phase idle end
if echo "$gpu" | grep -q H200; then
  for v in "default" "default,fp8=hf" "default,i8xp=1"; do
    dv_phase "gemv_$v" start
    DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="$v" \
      timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gb_$v.log 2>&1
    dv_phase "gemv_$v" end
    echo "gpu_bench $v rc=$? $(grep -m1 'copy D2D' $L/gb_$v.log | tr -s ' ')"
    grep -E "^(bf16|fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gb_$v.log | cut -c1-100
  done
fi
dv_models_wait
for spec in "fp8-block default" "fp8-block default,fp8=hf" "fp8-block default,ring=0" "int8 default" \
            "int8 default,i8xp=1" "bf16 default"; do
  set -- $spec
  dv_phase "dec_$1_$2" start
  DOTLM_GEMV=$2 dv_decode $1 --prompt-len 512 --gen 1024
  dv_phase "dec_$1_$2" end
done
for r in 1 2; do
  dv_decode fp8-block
  DOTLM_GEMV=default,fp8=hf dv_decode fp8-block
done
dv_clocks_table
grep -h "streamed" $L/dec_*.log | sort | uniq -c
dv_finish
