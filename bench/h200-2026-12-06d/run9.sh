#!/usr/bin/env bash
# session 44 call 9: the final build (gk_gemv_bw_per_sm and its check in
# test_gpu_forward: the default settings take i8xp from the bandwidth per
# SM in use); every GPU test, the fixtures, the SASS gate, and the
# settings gpu_bench reports on all SMs and on 96.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_gate
dv_tests
grep -E "DOTLM_GPU_SMS=16" $L/test_gpu_forward.log | head -2
for sms in all 96; do
  v=$sms; [ $sms = all ] && v=
  DOTLM_GPU_SMS=$v DOTLM_GEMV_MS=1 timeout 100 $B/dotlm_gpu_bench --no-sweep --quick > $L/gb_$sms.log 2>&1
  echo "gpu_bench sms=$sms rc=$? $(grep -m1 'GEMV settings' $L/gb_$sms.log | grep -oE 'i8xp=[0-9]')"
done
dv_finish
