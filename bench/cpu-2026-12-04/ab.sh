#!/bin/bash
# A/B of cpu.gemv.spread on this machine: kernel bench and Qwen2.5-0.5B-shaped decode
cd /work/main
for r in 1 2; do for d in none cpu.gemv.spread; do
  echo "== kernel 4096x4096 disable=$d run $r"; DOTLM_DISABLE=$d ./build/dotlm bench --shape 4096x4096 --reps 10 2>&1 | tail -9
done; done
for r in 1 2; do for d in none cpu.gemv.spread; do
  echo "== kernel 151936x896 disable=$d run $r"; DOTLM_DISABLE=$d ./build/dotlm bench --shape 151936x896 --reps 5 2>&1 | tail -9
done; done
for r in 1 2; do for f in bf16 fp8-block int8; do for d in none cpu.gemv.spread; do
  echo "== e2e $f disable=$d run $r"; DOTLM_DISABLE=$d ./build/dotlm bench --model /tmp/q05_$f --prompt-len 128 --gen 32 2>&1 | grep -E 'prompt|decode|floor'
done; done; done
