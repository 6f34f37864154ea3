#!/usr/bin/env bash
# session 44 call 4 (the H200 of run2/3, warm): run3 showed the fp8 ring's
# M = 1 GEMV stuck near 3000 GB/s on 5120x17408 whether it has 96 or 132
# SMs, while W8A8 (register loads) reaches 3900. Which part of the ring
# caps it: its L2 evict_first hint (DOTLM_DISABLE=cuda.gemv_l2_evict_first),
# its two stages (ring=2: three), the ring itself (ring=0: register loop),
# the next-chunk loads (xpf=0 / 1)?
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
V="default;default,ring=2;default,ring=0;default,xpf=0;default,xpf=1;default,fp8=hf"
DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="$V" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gb_all.log 2>&1
echo "gpu_bench rc=$? $(grep -m1 'copy D2D' $L/gb_all.log | tr -s ' ')"
DOTLM_DISABLE=cuda.gemv_l2_evict_first DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="$V" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gb_noevict.log 2>&1
echo "gpu_bench no evict_first rc=$? $(grep -m1 'copy D2D' $L/gb_noevict.log | tr -s ' ')"
for f in all noevict; do
  echo "== $f"; grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gb_$f.log | awk '{printf "%-11s %-26s %s %s %s %s\n", $3, $NF, $8, $9, $10, $11}'
done
for r in 1 2; do
  dv_decode fp8-block
  DOTLM_DISABLE=cuda.gemv_l2_evict_first dv_decode fp8-block
  DOTLM_GEMV=default,ring=2 dv_decode fp8-block
done
dv_finish
