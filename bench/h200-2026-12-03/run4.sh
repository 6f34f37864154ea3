#!/usr/bin/env bash
# session 30 call 4: the decode attention's opt-in forms and knobs,
# re-measured on today's code at 512 (each last timed on older code), bf16
# and fp8, interleaved with the default, two rounds
. bench/lib/device_prelude.sh
dv_init
dv_models bf16 fp8-block
timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_models_wait
run() { # NAME ENV... : one decode per format with that environment
  local n=$1; shift
  for f in bf16 fp8-block; do
    log=$L/k_${n}_$f.$(date +%s%N).log
    env "$@" timeout 90 $B/dotlm bench --model /dev/shm/m_$f --backend cuda --prompt-len 512 --gen 64 > $log 2>&1
    echo "$n $f: $(grep -hE '^decode' $log | sed 's/.*= //')"
  done
}
for round in 1 2; do
  run default X=0
  run kl512 DOTLM_GPU_ATTN_KL_MIN=512
  run seg64 DOTLM_GPU_ATTN_SEG=64
  run fuse DOTLM_GPU_ATTN_FUSE=1
  run cluster DOTLM_GPU_ATTN_CL=1
  run gb1 DOTLM_GPU_ATTN_GB=1
  run gb2 DOTLM_GPU_ATTN_GB=2
  run warm DOTLM_GPU_ATTN_WARM=1
  run qk DOTLM_GPU_ATTN_QK=1
done
dv_finish
grep -hE "copy D2D" $L/gpu_bench.log
