#!/usr/bin/env bash
# session 44 call 6: the committed build, i8xp chosen by device (1 where the
# memory bandwidth per SM is >= 32 GB/s: an H200, or an H100 limited to 96
# SMs; 0 on a whole H100). Every GPU test, the fixtures, the SASS gate; the
# settings each device gets (gpu_bench's "current" line); W8A8 decode with
# the device's choice against the other, interleaved; its counter.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models int8
dv_gate
dv_tests
for sms in all 96; do
  v=$sms; [ $sms = all ] && v=
  DOTLM_GPU_SMS=$v DOTLM_GEMV_MS=1 timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gb_$sms.log 2>&1
  echo "gpu_bench sms=$sms rc=$? $(grep -m1 'copy D2D' $L/gb_$sms.log | tr -s ' ')"
  grep -E "^int8 W8A8 +[0-9]+x[0-9]+ +1 " $L/gb_$sms.log | cut -c1-100
  grep -m1 "GEMV settings" $L/gb_$sms.log | grep -oE "i8xp=[0-9]"
done
dv_models_wait
for r in 1 2; do
  dv_decode int8
  DOTLM_GEMV=default,i8xp=0 dv_decode int8
  DOTLM_GEMV=default,i8xp=1 dv_decode int8
done
timeout 60 $B/dotlm bench --model /dev/shm/m_int8 --backend cuda --prompt-len 64 --gen 8 --stats > $L/stats.log 2>&1
grep -E "int8_gemv_xp" $L/stats.log | head -2
dv_finish
