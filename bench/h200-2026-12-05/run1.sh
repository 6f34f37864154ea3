#!/usr/bin/env bash
# session 33 call 1 (main 937a09a): the CUDA side of this session's gfx906
# work checked on the H200 -- every GPU test (the GEMV variant test now
# asks gk_gemv_wpb_max), fixtures on cuda, the SASS gate, the GEMV / GEMM /
# peak table, then fp8 / int8 / bf16 decode and prompt at 512, to compare
# with the 2026-12-03 table (bench/RESULTS.md): the prefill GEMM's scale
# locals and the attention prologue's weights changed in CUDA code.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8 bf16
dv_gate
dv_tests
timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_models_wait
echo "$(dv_t)"
for f in fp8-block int8 bf16; do
  for P in 512 512; do
    log=$L/dec_$f.$P.$(date +%s%N).log
    timeout 120 $B/dotlm bench --model /dev/shm/m_$f --backend cuda --prompt-len $P --gen 64 > $log 2>&1
    echo "$f P=$P: $(grep -hE '^prompt' $log | sed 's/.*= //') | $(grep -hE '^decode' $log | sed 's/.*= //')"
  done
done
DOTLM_GPU_ATTN_QK=1 dv_decode fp8-block --prompt-len 512 --gen 64 | sed 's/^/attn-qk opt-in /'
dv_finish
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(fp8 block|int8 W8A8|bf16) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-110
