#!/bin/bash
# fp8 e4m3 GEMV widening: VBMI tables (default where the CPU has VBMI) vs the
# fp16 widening, and row spreading off, on the Qwen2.5-0.5B-shaped fp8 model
cd "$(dirname "$0")/../.."
for r in 1 2 3; do for d in none cpu.qmm.fp8.avx512vbmi cpu.gemv.spread; do
  echo "== e2e fp8-block disable=$d run $r"
  DOTLM_DISABLE=$d ./build/dotlm bench --model /tmp/q05_fp8-block --prompt-len 128 --gen 64 2>&1 | grep -E 'decode|floor'
done; done
for r in 1 2; do for d in none cpu.qmm.fp8.avx512vbmi; do
  echo "== kernel 4096x4096 disable=$d run $r"
  DOTLM_DISABLE=$d ./build/dotlm bench --shape 4096x4096 --reps 20 2>&1 | grep -E 'bandwidth|^fp8'
done; done
