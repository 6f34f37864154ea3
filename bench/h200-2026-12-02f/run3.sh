#!/usr/bin/env bash
# session 29 call 3: the W8A8 GEMV with more of each row requested before
# the PDL wait (knob i8u=8: one row per warp, 8 chunks before the wait), as
# the read lab (run2) suggests: every GPU test (test_gpu_gemv_multi rotates
# i8u=8), the gate, the int8 M = 1 table for the variants, int8 decode at 512
. bench/lib/device_prelude.sh
dv_init
dv_models int8
dv_gate
dv_tests
V="default;default,i8u=4;default,i8r1=1;default,i8r1=1,i8u=8;default,i8r1=1,i8u=8,i8wpb=8"
DOTLM_GEMV_VARIANTS="$V" DOTLM_GEMV_MS=1 timeout 200 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1
echo "bench rc=$? $(dv_t)"
dv_models_wait
for i in 1 2; do
  dv_decode int8
  DOTLM_GEMV=default,i8r1=1,i8u=8 dv_decode int8
  DOTLM_GEMV=default,i8u=4 dv_decode int8
done
dv_finish
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^int8 W8A8 +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-150
