#!/usr/bin/env bash
# session 39 call 1: the W8A8 M = 1 register GEMV's activation-code loads
# (knob i8xp: 0 each chunk's codes as used, 1 a group's together, 2 with
# its weights one group ahead). The GEMV tests (they rotate i8xp and check
# its counter), the GEMVs alone per variant, then int8 Qwen3-8B decode at
# 512 and 4096, the three settings interleaved.
. bench/lib/device_prelude.sh
dv_init
dv_models int8
for t in test_gpu_gemv_multi test_gpu_forward; do
  timeout 200 "$B/$t" >"$L/$t.log" 2>&1; echo "$t rc=$? $(tail -1 "$L/$t.log")"
done
DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,i8xp=1;default,i8xp=2" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_models_wait
echo "$(dv_t)"
for round in 1 2 3; do
  for x in 0 1 2; do echo -n "i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8; done
done
for x in 0 1 2; do echo -n "i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8 --prompt-len 4096 --gen 32; done
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^int8 W8A8 +[0-9a-z/]+x?[0-9]* +1 " $L/gpu_bench.log | cut -c1-150
