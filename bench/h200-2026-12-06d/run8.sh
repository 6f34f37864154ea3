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
  DOTLM_GPU_SMS=$v $B/dotlm serve /dev/shm/m_fp8-block --backend cuda --port 8123 --max-seqs 8 --ctx 2048 \
      > $L/serve_$sms.log 2>&1 &
  sp=$!
  for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
  timeout 60 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 1,4 --duration 4 \
      --max-tokens 32 --prompt-words 100 --markdown > $L/loadgen_$sms.log 2>&1
  echo "server sms=$sms loadgen rc=$?:"; grep -E '^\| [0-9]' $L/loadgen_$sms.log
  kill -INT $sp; wait $sp; echo "serve exit=$?"
  grep -iE "error|DOTLM_GPU_SMS" $L/serve_$sms.log | head -3
done
dv_finish
