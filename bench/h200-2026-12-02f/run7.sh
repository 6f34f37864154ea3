#!/usr/bin/env bash
# session 29 call 7: the opt-in row attention (k_attn_row.cu,
# DOTLM_GPU_ATTN_ROW=1: one block per (token, query head) over the whole
# row, no combine): every GPU test (test_gpu_ops has its test), fixtures,
# the gate, then decode at 512 / 1024 / 2048 with it and without,
# interleaved, fp8 / int8 / bf16 (ROW_MAX=4096: at 2048 the grid bound is
# 4096, where the lane-per-key kernel runs by default)
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block int8 bf16
dv_gate
dv_tests
DOTLM_GPU_ATTN_ROW=1 DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures_row.log 2>&1
echo "fixtures (row attention) rc=$? $(tail -1 $L/fixtures_row.log)"
DOTLM_GPU_ATTN_ROW=1 timeout 200 $B/test_gpu_forward > $L/test_gpu_forward_row.log 2>&1
echo "test_gpu_forward (row attention) rc=$? $(tail -1 $L/test_gpu_forward_row.log)"
dv_models_wait
echo "$(dv_t)"
for f in fp8-block int8 bf16; do
  for P in 512 1024 2048; do
    for i in 1 2; do
      dv_decode $f --prompt-len $P --gen 64
      DOTLM_GPU_ATTN_ROW=1 DOTLM_GPU_ATTN_ROW_MAX=4096 dv_decode $f --prompt-len $P --gen 64
    done
  done
done 2>&1 | sed 's/decode: 64 tokens in [0-9.]* s = //'
DOTLM_GPU_ATTN_ROW=1 timeout 90 $B/dotlm bench --model /dev/shm/m_fp8-block --backend cuda --prompt-len 512 --gen 16 --stats > $L/stats_row.log 2>&1
grep -E "rowblock|attention.split " $L/stats_row.log | head -4
dv_finish
