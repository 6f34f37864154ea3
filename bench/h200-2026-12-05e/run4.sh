#!/usr/bin/env bash
# session 39 call 4: the committed build (xpf=2 and i8xp=1 opt-in). Every
# GPU test, the fixtures on cuda and the SASS gate; the #4 table (decode at
# 512 and 4096 and prompt tok/s for fp8 block, int8 W8A8 and bf16; the
# GEMVs alone at M = 1, 2, 4, 8, the prefill GEMM and the peaks); the M = 1
# GEMVs per knob; fp8 decode with xpf=2 against the default, interleaved.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8 bf16
dv_gate
dv_tests
timeout 200 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,xpf=1;default,xpf=2;default,i8xp=1" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_var.log 2>&1; echo "gpu_bench variants rc=$?"
dv_models_wait
echo "$(dv_t)"
for round in 1 2 3; do
  echo -n "xpf=0 "; dv_decode fp8-block
  echo -n "xpf=2 "; DOTLM_GEMV=xpf=2 dv_decode fp8-block
done
echo -n "xpf=0 "; dv_decode fp8-block --prompt-len 4096 --gen 32
echo -n "xpf=2 "; DOTLM_GEMV=xpf=2 dv_decode fp8-block --prompt-len 4096 --gen 32
for f in int8 bf16; do
  for round in 1 2; do dv_decode $f; done
  dv_decode $f --prompt-len 4096 --gen 32
done
for f in fp8-block int8 bf16; do grep -h '^prompt' $L/dec_$f.*.log | sed "s/^/$f /"; done
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D|peak|^fp32|^fp16|^int8 dp4a" $L/gpu_bench.log | head -5
grep -E "^(bf16|fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-140
grep -E "^(bf16|fp8 block|int8 W8A8) +(512|1024|2048|4096) " $L/gpu_bench.log
grep -E "^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench_var.log | cut -c1-150
