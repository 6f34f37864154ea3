#!/usr/bin/env bash
# session 29 call 8: the row attention with 256 / 512 / 1024 threads per
# block (DOTLM_GPU_ATTN_ROW_T; run7 ran 1024, which takes a whole SM's
# registers): test_gpu_ops (its test, at the default 512) and fixtures
# with it, then fp8 / int8 decode at 512 and 1024, interleaved
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8
timeout 200 $B/test_gpu_ops > $L/test_gpu_ops.log 2>&1; echo "test_gpu_ops rc=$? $(tail -1 $L/test_gpu_ops.log)"
DOTLM_GPU_ATTN_ROW=1 DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures_row.log 2>&1
echo "fixtures (row attention) rc=$? $(tail -1 $L/fixtures_row.log)"
dv_models_wait
for f in fp8-block int8; do
  for P in 512 1024; do
    for i in 1 2; do
      dv_decode $f --prompt-len $P --gen 64
      for T in 256 512 1024; do
        echo -n "T=$T "; DOTLM_GPU_ATTN_ROW=1 DOTLM_GPU_ATTN_ROW_T=$T dv_decode $f --prompt-len $P --gen 64
      done
    done
  done
done 2>&1 | sed 's/decode: 64 tokens in [0-9.]* s = //'
dv_finish
