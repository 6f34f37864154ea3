#!/usr/bin/env bash
# session 43 call 5 (any GPU): fp8=hf extended to M <= 8 (batched decode:
# the fp8 GEMV at M = 8 ran at 24-30% of the copy bandwidth on the H200,
# held by its 8 fp32 FMAs per weight byte). Its tests, the GEMV at M = 1,
# 2, 4, 8 against the default, the fixtures with it, and the server under
# 8 and 32 streaming clients with and without it.
. bench/lib/device_prelude.sh
dv_init
dv_models fp8-block
echo "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 240 $B/test_gpu_gemv_multi > $L/test_gpu_gemv_multi.log 2>&1
echo "test_gpu_gemv_multi rc=$? $(tail -1 $L/test_gpu_gemv_multi.log)"
grep -iE "CHECK failed|FAIL" $L/test_gpu_gemv_multi.log | head -6
DOTLM_GEMV_VARIANTS="default;default,fp8=hf" timeout 200 $B/dotlm_gpu_bench --no-sweep --quick > $L/gb.log 2>&1
echo "gpu_bench rc=$? $(grep -m1 'copy D2D' $L/gb.log)"
grep -E "^fp8 block +[0-9]+x[0-9]+ +[1248] " $L/gb.log | cut -c1-150
DOTLM_GEMV=default,fp8=hf DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures_hf.log 2>&1
echo "fixtures fp8=hf rc=$? $(tail -1 $L/fixtures_hf.log)"
dv_models_wait
d=/dev/shm/m_fp8-block
for v in default hf default hf; do
  if [ $v = hf ]; then export DOTLM_GEMV=default,fp8=hf; else unset DOTLM_GEMV; fi
  $B/dotlm serve $d --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > $L/serve_$v.log 2>&1 &
  sp=$!
  for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
  timeout 100 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 12 \
      --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen_$v.$i.log 2>&1
  echo "server $v:"; grep -E '^\| [0-9]' $L/loadgen_$v.$i.log
  kill -INT $sp; wait $sp
done
unset DOTLM_GEMV
dv_decode fp8-block
DOTLM_GEMV=default,fp8=hf dv_decode fp8-block
dv_finish
