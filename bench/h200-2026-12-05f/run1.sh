#!/usr/bin/env bash
# session 40 call 1: the thirty-ninth session's last build, not yet run on a
# GPU (xpf=2 the default, i8xp=2, the refactors). Every GPU test, the
# fixtures, the SASS gate; the M = 1 GEMVs per knob; W8A8 decode with
# i8xp 0 / 2 (Qwen3-8B: only down has k > 4096) and 0 / 1 / 2 on a
# Qwen3-14B-shaped W8A8 model (every weight has k >= 5120: the #4 GEMV
# shapes are its shapes), interleaved.
. bench/lib/device_prelude.sh
dv_init
dv_models int8 fp8-block
dv_gate
dv_tests
DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,xpf=0;default,xpf=1;default,i8xp=1;default,i8xp=2" timeout 90 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_var.log 2>&1; echo "gpu_bench variants rc=$?"
dv_models_wait
dv_models --preset qwen3-14b int8
echo "$(dv_t)"
for round in 1 2 3; do
  for x in 0 2; do echo -n "i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8; done
done
for x in 0 2; do echo -n "i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8 --prompt-len 4096 --gen 32; done
echo -n "default "; dv_decode fp8-block
echo -n "xpf=0 "; DOTLM_GEMV=xpf=0 dv_decode fp8-block
dv_models_wait
echo "$(dv_t) $(cat $L/gen_int8_14b.log | tail -1)"
for round in 1 2; do
  for x in 0 1 2; do echo -n "14b i8xp=$x "; DOTLM_GEMV=i8xp=$x dv_decode int8_14b; done
done
# Nsight Systems, if the machine has it: one fp8 and one int8 decode traced
# with the graph's nodes, each kernel's share of the step (bench/lib/nsys_step.py)
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}"
if [ -n "$NSYS" ]; then
  for f in fp8-block int8; do
    timeout 100 $NSYS profile -t cuda --cuda-graph-trace=node -f true -o /tmp/ns_$f $B/dotlm bench --model /dev/shm/m_$f --backend cuda --prompt-len 512 --gen 32 > $L/nsys_$f.log 2>&1
    timeout 100 $NSYS stats -r cuda_gpu_trace -f csv -o /tmp/ns_$f /tmp/ns_$f.nsys-rep >> $L/nsys_$f.log 2>&1
    cp /tmp/ns_${f}_cuda_gpu_trace.csv $L/ 2>/dev/null
    python3 bench/lib/nsys_step.py /tmp/ns_${f}_cuda_gpu_trace.csv --show 12 > $L/nsys_step_$f.txt 2>&1
    echo "== $f"; head -32 $L/nsys_step_$f.txt
  done
fi
echo "$(dv_t)"
dv_finish
nvidia-smi --query-gpu=name --format=csv,noheader
grep -E "copy D2D" $L/gpu_bench_var.log
grep -E "^(fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench_var.log | cut -c1-150
