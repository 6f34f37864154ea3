#!/usr/bin/env bash
# session 44 call 8: gpurt_bind (a thread other than the one that created
# the backend makes its device, or its DOTLM_GPU_SMS green context, current
# before its first call): test_gpu_forward (its partition checks now
# decode the int8 fixture from a second thread), then `dotlm serve`, whose
# scheduler thread runs the forwards, on 96 SMs and on all, under a short
# load.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
dv_models fp8-block
timeout 200 $B/test_gpu_forward > $L/test_gpu_forward.log 2>&1
echo "test_gpu_forward rc=$? $(tail -1 $L/test_gpu_forward.log)"
grep -E "DOTLM_GPU_SMS|FAIL|failed:|SKIP" $L/test_gpu_forward.log | head -6
dv_models_wait
for sms in 96 all; do
  v=$sms; [ $sms = all ] && v=
  DOTLM_GPU_SMS=$v dv_serve_loadgen "$sms" /dev/shm/m_fp8-block --concurrency 1,4 --duration 4 \
      --max-tokens 32 --prompt-words 100
  grep -iE "error|DOTLM_GPU_SMS" $L/serve_$sms.log | head -3
done
dv_finish
