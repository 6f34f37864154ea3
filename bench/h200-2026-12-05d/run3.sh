#!/usr/bin/env bash
# session 38 call 3: the fp8 ring's next-chunk loads in the engine (knob
# xpf, switch cuda.gemv_ring_xpf, on in this build). Every GPU unit test,
# fixtures on cuda, the SASS gate; fp8 decode at 512 (and 4096) with the
# switch on against off, interleaved; the GEMV kernels alone, xpf=1 / 0.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
dv_gate
dv_tests
grep -m3 "CHECK failed" $L/test_gpu_gemv_multi.log | cut -c1-250
dv_models_wait
echo "$(dv_t)"
for round in 1 2 3; do
  echo -n "on  "; dv_decode fp8-block
  echo -n "off "; DOTLM_DISABLE=cuda.gemv_ring_xpf dv_decode fp8-block
done
for round in 1 2; do
  echo -n "on  "; dv_decode fp8-block --prompt-len 4096 --gen 32
  echo -n "off "; DOTLM_DISABLE=cuda.gemv_ring_xpf dv_decode fp8-block --prompt-len 4096 --gen 32
done
timeout 60 $B/dotlm bench --model /dev/shm/m_fp8-block --backend cuda --prompt-len 64 --gen 8 --stats 2>&1 | grep -E "gemv_ring_xpf|gemv_ring " | head -3
echo "$(dv_t)"
DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,xpf=0" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-140
grep -E "^fp8 block +(q/k/v|gate/up)" $L/gpu_bench.log | head -4
