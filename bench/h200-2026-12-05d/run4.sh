#!/usr/bin/env bash
# session 38 call 4: which fp8 M = 1 ring launches should load the next
# chunk's inputs (run3 on an H100: the GEMV alone +3 to +8 points, decode
# 1-2% slower). Decode at 512 and 4096, interleaved: the switch off, every
# M = 1 ring launch (default), the gate/up pairs only
# (DOTLM_GEMV_XPF_MODE=pair); the GEMV tests under pair; the GEMVs alone.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
for t in test_gpu_gemv_multi test_gpu_forward; do
  timeout 200 "$B/$t" >"$L/$t.log" 2>&1; echo "$t rc=$? $(tail -1 "$L/$t.log")"
done
DOTLM_GEMV_XPF_MODE=pair timeout 200 "$B/test_gpu_forward" >"$L/test_gpu_forward.pair.log" 2>&1; echo "test_gpu_forward pair rc=$? $(tail -1 "$L/test_gpu_forward.pair.log")"
DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,xpf=0" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "gpu_bench rc=$?"
DOTLM_GEMV_MS=1 DOTLM_GEMV=xpf=0 timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_off.log 2>&1; echo "gpu_bench off rc=$?"
dv_models_wait
echo "$(dv_t)"
for round in 1 2 3 4; do
  echo -n "off  "; DOTLM_DISABLE=cuda.gemv_ring_xpf dv_decode fp8-block
  echo -n "all  "; dv_decode fp8-block
  echo -n "pair "; DOTLM_GEMV_XPF_MODE=pair dv_decode fp8-block
done
for round in 1 2; do
  echo -n "off  "; DOTLM_DISABLE=cuda.gemv_ring_xpf dv_decode fp8-block --prompt-len 4096 --gen 32
  echo -n "all  "; dv_decode fp8-block --prompt-len 4096 --gen 32
  echo -n "pair "; DOTLM_GEMV_XPF_MODE=pair dv_decode fp8-block --prompt-len 4096 --gen 32
done
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-140
for f in gpu_bench gpu_bench_off; do grep -E "^fp8 block +(q/k/v|gate/up).* 1 " $L/$f.log | sed "s/^/$f: /"; done
