#!/usr/bin/env bash
# session 43 call 6 (any GPU; more on an H200; ran on an H100 with the
# build of run6/hf_batch.patch): fp8=hf at M <= 8 against the default (the
# GEMV at M = 1, 2, 4, 8, decode, the server under 8 and 32 clients), and
# on an H200 also run2's: the M = 1 GEMV reading x's twin, clocks through the
# GEMV benches, and the Qwen3-14B-shaped fp8 model with and without hf.
. bench/lib/device_prelude.sh
dv_init
H200=0; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && H200=1
dv_models fp8-block
[ $H200 = 1 ] && dv_models --preset qwen3-14b fp8-block
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 240 $B/test_gpu_gemv_multi > $L/test_gpu_gemv_multi.log 2>&1
echo "test_gpu_gemv_multi rc=$? $(tail -1 $L/test_gpu_gemv_multi.log)"
grep -iE "CHECK failed|FAIL" $L/test_gpu_gemv_multi.log | head -6
dv_clocks_start
dv_phase gemv start
DOTLM_GEMV_MS=1,2,4,8 DOTLM_GEMV_VARIANTS="default;default,fp8=hf" timeout 200 $B/dotlm_gpu_bench --no-sweep --quick > $L/gb.log 2>&1
echo "gpu_bench rc=$? $(grep -m1 'copy D2D' $L/gb.log)"
dv_phase gemv end
grep -E "^fp8 block +[0-9]+x[0-9]+ +[1248] " $L/gb.log | cut -c1-150
if [ $H200 = 1 ]; then
  dv_phase gemv_twin start
  DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="default;default,fp8=hf" \
    timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gb_twin.log 2>&1
  dv_phase gemv_twin end
  echo "twin:"; grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gb_twin.log | cut -c1-150
fi
dv_model_ready fp8-block
for r in 1; do
  dv_phase dec_default$r start; dv_decode fp8-block; dv_phase dec_default$r end
  dv_phase dec_hf$r start; DOTLM_GEMV=default,fp8=hf dv_decode fp8-block; dv_phase dec_hf$r end
done
d=/dev/shm/m_fp8-block
for v in default hf; do
  if [ $v = hf ]; then export DOTLM_GEMV=default,fp8=hf; else unset DOTLM_GEMV; fi
  $B/dotlm serve $d --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > $L/serve_$v.log 2>&1 &
  sp=$!
  for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
  timeout 100 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 10 \
      --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen_$v.log 2>&1
  echo "server $v:"; grep -E '^\| [0-9]' $L/loadgen_$v.log
  kill -INT $sp; wait $sp
done
unset DOTLM_GEMV
if [ $H200 = 1 ]; then
  dv_models_wait
  for r in 1; do
    echo -n "14b "; dv_decode fp8-block_14b
    echo -n "14b "; DOTLM_GEMV=default,fp8=hf dv_decode fp8-block_14b
  done
fi
dv_clocks_table
dv_finish
