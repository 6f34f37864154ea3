#!/usr/bin/env bash
# session 44 call 1: DOTLM_GPU_SMS, an H200 emulated on an H100. An H200
# streams 4203.8 GB/s over 132 SMs (31.8 GB/s per SM), an H100 ~3026 GB/s;
# limited to 96 SMs (a green context) the H100 has 31.5 GB/s per SM, so a
# kernel bound by its per-SM instruction rate or bytes in flight should
# reach about the H200's share of the copy bandwidth. The test (the green
# partition's checks in test_gpu_forward), then the M = 1 GEMVs (x's twin,
# as decode) on all SMs and on 112 / 96 / 88, then decode at 512 on all SMs
# and on 96, fp8 also with fp8=hf.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8 bf16
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 200 $B/test_gpu_forward > $L/test_gpu_forward.log 2>&1
echo "test_gpu_forward rc=$? $(tail -1 $L/test_gpu_forward.log)"
grep -E "DOTLM_GPU_SMS|FAIL|failed:|SKIP" $L/test_gpu_forward.log | head -6
dv_gemv_sms "default;default,fp8=hf;default,i8xp=1" all 112 96 88
dv_models_wait
for r in 1 2; do
  for f in fp8-block int8 bf16; do
    dv_decode $f
    DOTLM_GPU_SMS=96 dv_decode $f
  done
  DOTLM_GPU_SMS=96 DOTLM_GEMV=default,fp8=hf dv_decode fp8-block
  DOTLM_GPU_SMS=96 DOTLM_GEMV=default,i8xp=1 dv_decode int8
done
grep -h "streamed" $L/dec_*.log | sort | uniq -c
python3 bench/lib/sms_table.py $L
dv_finish
