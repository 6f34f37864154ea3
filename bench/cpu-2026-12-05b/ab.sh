#!/usr/bin/env bash
# The AVX-512VL 6x4 prefill tile of the 16-bit CPU matmul against the AVX2
# 4x2 tile (DOTLM_DISABLE=cpu.matmul.*.avx512vl), interleaved: the kernel
# table (M = 256 GEMM, % of the fma ymm peak) and the bf16 0.5B-shaped
# prompt. Model: python3 tools/make_bench_model.py --preset qwen2.5-0.5b
# --format bf16 /tmp/q05_bf16
D=${D:-./build/dotlm}
for round in 1 2; do
  for sw in on off; do
    if [ $sw = off ]; then export DOTLM_DISABLE='cpu.matmul.*.avx512vl'; else unset DOTLM_DISABLE; fi
    echo "== round $round, wide tile $sw"
    $D bench --shape 4096x4096 -t 1 --reps 5 2>&1 | grep -E '^(bf16|f16|f32) '
    for t in 1 2; do
      echo "bf16 0.5B prompt 512, $t thread(s): $($D bench --model /tmp/q05_bf16 --prompt-len 512 --gen 8 -t $t 2>&1 | grep -E '^prompt' | sed 's/ (forwards.*//')"
    done
  done
done
