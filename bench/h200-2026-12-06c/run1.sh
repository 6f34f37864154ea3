#!/usr/bin/env bash
# session 43 call 1: the opt-in fp16 chunk products for e4m3 at M = 1
# (knob fp8=hf): its test, the M = 1 GEMV against the default (plain and
# reading x's twin, as decode does), the fixtures with it on, and Qwen3-8B
# fp8 decode with it, interleaved with the default.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 240 $B/test_gpu_gemv_multi > $L/test_gpu_gemv_multi.log 2>&1
echo "test_gpu_gemv_multi rc=$? $(tail -1 $L/test_gpu_gemv_multi.log)"
grep -iE "CHECK failed|FAIL" $L/test_gpu_gemv_multi.log | head -6
for tw in 0 1; do
  DOTLM_BENCH_TWIN=$tw DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,fp8=hf" \
    timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gb_twin$tw.log 2>&1
  echo "gpu_bench twin=$tw rc=$? $(grep -m1 'copy D2D' $L/gb_twin$tw.log)"
  grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gb_twin$tw.log | cut -c1-150
done
DOTLM_GEMV=default,fp8=hf DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures_hf.log 2>&1
echo "fixtures fp8=hf rc=$? $(tail -1 $L/fixtures_hf.log)"
grep -iE "FAIL" $L/fixtures_hf.log | head -6
dv_models_wait
for r in 1 2; do
  dv_decode fp8-block
  DOTLM_GEMV=default,fp8=hf dv_decode fp8-block
done
dv_decode fp8-block --prompt-len 4096 --gen 32
DOTLM_GEMV=default,fp8=hf dv_decode fp8-block --prompt-len 4096 --gen 32
DOTLM_GEMV=default,fp8=hf timeout 60 $B/dotlm bench --model /dev/shm/m_fp8-block --backend cuda --prompt-len 64 --gen 8 --stats > $L/stats_hf.log 2>&1
grep -E "streamed|gemv_hf|gemv_fold" $L/stats_hf.log | head -4
dv_finish
