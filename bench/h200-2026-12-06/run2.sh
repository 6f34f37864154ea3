#!/usr/bin/env bash
# session 41 call 2: the committed build (run1's, plus dl_gv_row_scale, the
# SASS-identical merge of dl_gv_chunk's general-M scale loads). Every GPU
# test, the fixtures on cuda and the SASS gate; the #4 table (decode at 512
# and 4096 and prompt tok/s for fp8 block, int8 W8A8 and bf16; the GEMVs
# alone at M = 1, 2, 4, 8, the prefill GEMM and the peaks); the GPU's
# clocks before and after; one fp8 decode of 256 tokens (does a 64-token
# decode run before the clocks settle?).
. bench/lib/device_prelude.sh
dv_init
nvidia-smi -q -d CLOCK > $L/clocks_before.txt 2>&1
dv_models fp8-block int8 bf16
dv_gate
dv_tests
timeout 200 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_models_wait
echo "$(dv_t)"
for round in 1 2; do
  for f in fp8-block int8 bf16; do dv_decode $f; done
done
dv_decode fp8-block
for f in fp8-block int8 bf16; do dv_decode $f --prompt-len 4096 --gen 32; done
dv_decode fp8-block --prompt-len 512 --gen 256
nvidia-smi -q -d CLOCK > $L/clocks_after.txt 2>&1
for f in fp8-block int8 bf16; do grep -h '^prompt' $L/dec_$f.*.log | sed "s/^/$f /"; done
dv_finish
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
grep -E "copy D2D|^fp32|^fp16|^int8 dp4a" $L/gpu_bench.log | head -5
grep -E "^(bf16|fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-140
grep -E "^(bf16|fp8 block|int8 W8A8) +(512|1024|2048|4096) " $L/gpu_bench.log
