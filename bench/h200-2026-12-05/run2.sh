#!/usr/bin/env bash
# session 33 call 2: prompt tok/s at 4096 (and 512) for fp8 block / int8 / bf16,
# the check of the prefill GEMM's block-scale locals (dl_k_gemm2_f) against
# the 2026-12-01/03 figures (fp8 block 2778-2780, int8 5918-5921 at 4096)
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8 bf16
dv_models_wait
echo "$(dv_t)"
for f in fp8-block int8 bf16; do
  for P in 4096 4096 512; do
    log=$L/pf_$f.$P.$(date +%s%N).log
    timeout 120 $B/dotlm bench --model /dev/shm/m_$f --backend cuda --prompt-len $P --gen 16 > $log 2>&1
    echo "$f P=$P: $(grep -hE '^prompt' $log | sed 's/.*= //')"
  done
done
dv_finish
