#!/usr/bin/env bash
# session 43 call 2 (only on an H200): fp8=hf against the default on the
# H200, where the fp8 GEMV needs ~40% more instructions per second than on
# an H100 (run1 on an H100: no gain there). GEMV alone (plain x and the
# twin), clocks through it, Qwen3-8B fp8 decode interleaved, then the
# Qwen3-14B-shaped fp8 model (never run on an H200 yet).
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || {
    echo "not an H200: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
    exit 0
}
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
dv_models --preset qwen3-14b fp8-block
dv_clocks_start
sleep 1
for tw in 0 1; do
  dv_phase "gemv_twin$tw" start
  DOTLM_BENCH_TWIN=$tw DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,fp8=hf" \
    timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gb_twin$tw.log 2>&1
  rc=$?
  dv_phase "gemv_twin$tw" end
  echo "gpu_bench twin=$tw rc=$rc $(grep -m1 'copy D2D' $L/gb_twin$tw.log)"
  grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gb_twin$tw.log | cut -c1-150
done
dv_model_ready fp8-block
for r in 1 2; do
  dv_phase "dec_default$r" start; dv_decode fp8-block; dv_phase "dec_default$r" end
  dv_phase "dec_hf$r" start; DOTLM_GEMV=default,fp8=hf dv_decode fp8-block; dv_phase "dec_hf$r" end
done
dv_decode fp8-block --prompt-len 4096 --gen 32
DOTLM_GEMV=default,fp8=hf dv_decode fp8-block --prompt-len 4096 --gen 32
dv_models_wait
for r in 1; do
  echo -n "14b "; dv_decode fp8-block_14b
  echo -n "14b "; DOTLM_GEMV=default,fp8=hf dv_decode fp8-block_14b
done
dv_clocks_table
for cv in 2 5; do # fold, hf: the M = 1 ring (xpf=2) reading the twin
  fn="_Z12dl_k_gemv_faILi3ELi1ELi4ELi${cv}ELi2ELb1ELi0ELi2EEvPKf9dl_gv_jobii"
  echo "sass CV=$cv: $(cuobjdump -sass -fun "$fn" $B/dotlm 2>&1 | grep -cE '/\*[0-9a-f]{4}\*/') instructions"
done
grep -h streamed $L/dec_*.log | sort | uniq -c
dv_finish
