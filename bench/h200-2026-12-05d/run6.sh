#!/usr/bin/env bash
# session 38 call 6: the #4 table for the committed build on one GPU. Decode
# at 512 and 4096 and prompt tok/s for bf16, fp8 block and int8 W8A8
# (Qwen3-8B shapes, random weights); the GEMVs alone at M = 1, 2, 4, 8 and
# the prefill GEMM (dotlm_gpu_bench --no-sweep --quick).
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8 bf16
timeout 200 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_models_wait
echo "$(dv_t)"
for f in fp8-block int8 bf16; do
  for round in 1 2; do dv_decode $f; done
  dv_decode $f --prompt-len 4096 --gen 32
  grep -h '^prompt' $L/dec_$f.*.log | sed "s/^/$f /"
done
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D|peak|^fp32|^fp16|^int8 dp4a" $L/gpu_bench.log | head -5
grep -E "^(bf16|fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-140
grep -E "^(bf16|fp8 block|int8 W8A8) +(512|1024|2048|4096) " $L/gpu_bench.log
