#!/usr/bin/env bash
# session 46, the last device minutes: the GPU tests on the dl_occ_pad
# build (test_gpu_gemv_multi checks the caps' bits and counter), then the
# M = 1 GEMVs with occ=6 / i8occ=6 if time is left.
. bench/lib/device_prelude.sh
dv_init
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
for t in test_gpu_gemv_multi test_gpu_ops; do
  timeout 100 "$B/$t" >"$L/$t.log" 2>&1; echo "$t rc=$? $(tail -1 "$L/$t.log")"
done
grep -m5 FAIL "$L/test_gpu_gemv_multi.log"
dv_t
dv_gb dflt
DOTLM_GEMV=default,occ=6,i8occ=6 dv_gb occ6
dv_gb_table dflt occ6
dv_finish
