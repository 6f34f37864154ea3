#!/usr/bin/env bash
# session 34 call 1: deeper fp8 weight rings for the small M = 1 launches
# (knob sring: q/k/v and o_proj, which follow a small kernel) -- every GPU
# test (the variant test now rotates ring=0..4), fixtures, SASS gate, then
# fp8 decode at 512 interleaved: sring=0 (default: 2 stages), 2 (3 stages),
# 3 (4 stages: 3 of the 4 chunks of a lane's row slice before the PDL
# wait), 4 (5 stages: all 4); every M = 1 launch at ring=3 / 4; the GEMV
# kernel alone at ring=1..4.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
dv_gate
dv_tests
dv_models_wait
echo "$(dv_t)"
for round in 1 2 3; do
  for s in 0 2 3 4; do DOTLM_GEMV=default,sring=$s dv_decode fp8-block; done
done
for r in 3 4; do DOTLM_GEMV=default,ring=$r dv_decode fp8-block; done
for s in 0 3 4; do DOTLM_GEMV=default,sring=$s dv_decode fp8-block --prompt-len 4096 --gen 32; done
echo "$(dv_t)"
DOTLM_GEMV_VARIANTS="default;default,ring=2;default,ring=3;default,ring=4" timeout 200 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_finish
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(fp8 block) +[0-9]+x[0-9]+ +1 |ring=" $L/gpu_bench.log | cut -c1-120 | head -30
