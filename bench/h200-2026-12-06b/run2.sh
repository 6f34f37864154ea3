#!/usr/bin/env bash
# session 42 call 2: the experiment knob xpf=3 (the fp8 M = 1 ring's second
# register set, xpf=1, only for launches of k <= 8192 that are not a
# gate/up pair: q/k/v and o_proj; xpf=2 for gate/up and down). Bits: the
# fixture's logits token by token (every forward at M = 1) under xpf 0 / 2
# / 3 must be the same bytes. Decode: Qwen3-8B fp8 with xpf 2 / 3 / 1
# interleaved at 512, 2 / 3 after 4096; Qwen3-14B fp8 (k = 5120 in q/k/v
# and o_proj) with 2 / 3.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
dv_models --preset qwen3-14b fp8-block
timeout 25 stdbuf -oL $B/dotlm_gpu_bench --no-sweep --quick > $L/peaks.log 2>&1 || true
grep -E "copy D2D" $L/peaks.log
T=$(python3 -c "import random;print(','.join(str(random.randrange(512)) for _ in range(40)))")
for x in 0 2 3; do
  DOTLM_GEMV=xpf=$x timeout 60 $B/dotlm logits fixtures/qwen3_fp8_block --tokens $T --prefill-chunk 1 \
    --backend cuda --out /tmp/lg_$x.npy --stats > $L/logits_xpf$x.log 2>&1
  echo "logits xpf=$x rc=$? $(grep -E 'gemv_ring_xpf' $L/logits_xpf$x.log | head -1)"
done
cmp /tmp/lg_0.npy /tmp/lg_2.npy && cmp /tmp/lg_0.npy /tmp/lg_3.npy && echo "logits: xpf 0 / 2 / 3 the same bytes"
dv_model_ready fp8-block
echo "$(dv_t) $(tail -1 $L/gen_fp8-block.log)"
for round in 1 2 3; do
  for x in 2 3 1; do echo -n "xpf=$x "; DOTLM_GEMV=xpf=$x dv_decode fp8-block; done
done
for x in 2 3; do echo -n "xpf=$x "; DOTLM_GEMV=xpf=$x dv_decode fp8-block --prompt-len 4096 --gen 32; done
dv_models_wait
echo "$(dv_t) $(tail -1 $L/gen_fp8-block_14b.log)"
for round in 1 2; do
  for x in 2 3; do echo -n "14b xpf=$x "; DOTLM_GEMV=xpf=$x dv_decode fp8-block_14b; done
done
grep -h streamed $L/dec_*.log | sort | uniq -c
dv_finish
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
