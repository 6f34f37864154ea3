#!/usr/bin/env bash
# session 27 call 3: permuted activation twins at M = 1 (cuda.gemv_twin:
# the norms and the gate/up SiLU epilogue write x's twin, the fp8 GEMVs
# read it) and mlb=3 as the default: test_gpu_gemv_multi, test_gpu_ops,
# test_gpu_forward, fixtures on cuda, the SASS gate; the GEMV table with
# and without DOTLM_BENCH_TWIN=1; fp8 decode at 512 with the twin on /
# off (DOTLM_DISABLE=cuda.gemv_twin), interleaved; the fp8 server
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
B=/tmp/r; export LD_LIBRARY_PATH=$B/lib
(timeout 200 python3 tools/make_bench_model.py /dev/shm/m_f8 --preset qwen3-8b --format fp8-block > $L/gen_f8.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_f8/) &
gp=$!
(timeout 280 tools/gpu_gate.sh --no-ptx --no-hip --sass $B/dotlm > $L/gate.log 2>&1; echo "gate rc=$?" >> $L/gate.log) &
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward; do
  timeout 200 $B/$t > $L/$t.log 2>&1; echo "$t rc=$? $(tail -1 $L/$t.log)"
done
grep -m5 FAIL $L/test_gpu_*.log
echo "t=$(( $(date +%s) - t0 ))s"
timeout 100 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "bench rc=$?"
DOTLM_BENCH_TWIN=1 timeout 100 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_twin.log 2>&1; echo "bench twin rc=$?"
wait $gp
echo "t=$(( $(date +%s) - t0 ))s"
for i in 1 2; do
  for v in on off; do
    if [ $v = off ]; then e=DOTLM_DISABLE=cuda.gemv_twin; else e=X=1; fi
    env $e timeout 60 $B/dotlm bench --model /dev/shm/m_f8 --backend cuda --prompt-len 512 --gen 64 > $L/dec_${v}_$i.log 2>&1
    echo "decode $v $i: $(grep -E '^decode' $L/dec_${v}_$i.log | tail -1)"
  done
done
DOTLM_DISABLE=cuda.gemv_twin timeout 60 $B/dotlm bench --model /dev/shm/m_f8 --backend cuda --prompt-len 4096 --gen 32 > $L/dec4k_off.log 2>&1
timeout 60 $B/dotlm bench --model /dev/shm/m_f8 --backend cuda --prompt-len 4096 --gen 32 > $L/dec4k_on.log 2>&1
echo "4096 off: $(grep -E '^decode' $L/dec4k_off.log | tail -1)"
echo "4096 on:  $(grep -E '^decode' $L/dec4k_on.log | tail -1)"
if [ $(( $(date +%s) - t0 )) -lt 300 ]; then
  DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
  echo "fixtures rc=$? $(tail -1 $L/fixtures.log)"
fi
if [ $(( $(date +%s) - t0 )) -lt 400 ]; then
  $B/dotlm serve /dev/shm/m_f8 --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > $L/serve.log 2>&1 &
  sp=$!
  for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
  timeout 100 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 15 \
      --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen.log 2>&1
  echo "server:"; grep -E '^\| [0-9]' $L/loadgen.log
  kill -INT $sp; wait $sp
fi
wait
echo "t=$(( $(date +%s) - t0 ))s"
tail -2 $L/gate.log
tar czf $OUT/logs.tgz -C $L .
grep -E "copy D2D" $L/gpu_bench.log
echo "-- default / twin (kernel alone at M = 1)"
grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-125
grep -E "^fp8 block +[0-9]+x[0-9]+ +1 " $L/gpu_bench_twin.log | cut -c1-125
sed -n '/multi-weight/,/^$/p' $L/gpu_bench.log | grep -E "fp8" | head -6
