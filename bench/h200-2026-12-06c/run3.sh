#!/usr/bin/env bash
# session 43 call 3 (an H100 held after run2's guard): fp8=hf against the
# default without --quick (40 timed launches per column), x's twin as in
# decode, twice; then Qwen3-14B-shaped fp8 decode (its GEMVs are the #4
# shapes) interleaved.
. bench/lib/device_prelude.sh
dv_init
dv_models --preset qwen3-14b fp8-block
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
for i in 1 2; do
  DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,fp8=hf" \
    timeout 200 $B/dotlm_gpu_bench --no-sweep > $L/gb_$i.log 2>&1
  echo "gpu_bench $i rc=$? $(grep -m1 'copy D2D' $L/gb_$i.log)"
  grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gb_$i.log | cut -c1-150
done
dv_models_wait
for r in 1 2; do
  echo -n "14b "; dv_decode fp8-block_14b
  echo -n "14b "; DOTLM_GEMV=default,fp8=hf dv_decode fp8-block_14b
done
dv_finish
