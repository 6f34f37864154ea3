#!/usr/bin/env bash
# session 36 call 3 (run2.sh trimmed to the device time left): the fp8
# rings' weight copies with the L2 evict_first hint as the default. Every
# GPU unit test, fixtures on cuda, then fp8 decode at 512 on / off.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward test_gpu_gdn; do
  timeout 150 "$B/$t" >"$L/$t.log" 2>&1; echo "$t rc=$? $(tail -1 "$L/$t.log")"
done
DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 100 python3 tests/py/test_fixtures.py >"$L/fixtures.log" 2>&1
echo "fixtures rc=$? $(tail -1 "$L/fixtures.log")"
dv_models_wait
for round in 1 2; do
  echo -n "on  "; dv_decode fp8-block
  echo -n "off "; DOTLM_DISABLE=cuda.gemv_l2_evict_first dv_decode fp8-block
done
dv_finish
