#!/usr/bin/env bash
# session 39 call 2: xpf=2 (the fp8 M = 1 ring loads chunk c's activations
# and scales before waiting for its weights, 64 registers) and i8xp=2 (the
# W8A8 M = 1 register GEMV loads a group's codes with its weights). The GEMV
# tests (they rotate both and check the counters), the GEMVs alone per
# variant, then fp8 and int8 Qwen3-8B decode at 512 and 4096, interleaved.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8
for t in test_gpu_gemv_multi test_gpu_forward; do
  timeout 200 "$B/$t" >"$L/$t.log" 2>&1; echo "$t rc=$? $(tail -1 "$L/$t.log")"
done
DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,xpf=1;default,xpf=2;default,i8xp=2" timeout 200 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_models_wait
echo "$(dv_t)"
for round in 1 2 3; do
  for x in 0 2; do echo -n "xpf=$x "; DOTLM_GEMV=xpf=$x dv_decode fp8-block; done
  for x in 0 2; do echo -n "i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8; done
done
for x in 0 2; do echo -n "xpf=$x "; DOTLM_GEMV=xpf=$x dv_decode fp8-block --prompt-len 4096 --gen 32; done
for x in 0 2; do echo -n "i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8 --prompt-len 4096 --gen 32; done
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-150
grep -E "^(fp8 block|int8 W8A8) +(q/k/v|gate/up|o_proj|down).* 1 " $L/gpu_bench.log | head -20
