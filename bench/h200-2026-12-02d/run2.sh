#!/usr/bin/env bash
# session 27 call 2: the epilogue helper refactor (dl_gv_emit) and the
# mlb=3 dispatch counter: test_gpu_gemv_multi, test_gpu_ops,
# test_gpu_forward, the SASS gate; the GEMV table at M = 1, 2, 4, 8 and at
# M = 5..8 with default / mlb=3; fp8 decode twice; the fp8 server with
# default / DOTLM_GEMV=default,mlb=3; the GEMV lab's permuted-x set
# (bench/lab/gemv_lab.cu SET 1: does x permuted help the M = 1 ring?)
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
echo "t=$(( $(date +%s) - t0 ))s"
nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/gemv_lab bench/lab/gemv_lab.cu > $L/lab_build.log 2>&1 && timeout 120 /tmp/gemv_lab 40 -1 1 > $L/lab.log 2>&1
echo "lab rc=$?"
timeout 100 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "bench rc=$?"
DOTLM_GEMV_MS=5,6,7,8 DOTLM_GEMV_VARIANTS="default;default,mlb=3" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_m58.log 2>&1; echo "bench m58 rc=$?"
wait $gp
echo "t=$(( $(date +%s) - t0 ))s"
for i in 1 2; do
  timeout 60 $B/dotlm bench --model /dev/shm/m_f8 --backend cuda --prompt-len 512 --gen 64 > $L/dec_$i.log 2>&1; echo "decode $i: $(grep -E '^decode' $L/dec_$i.log | tail -1)"
done
srv() { # name env...
  local n=$1; shift
  env "$@" $B/dotlm serve /dev/shm/m_f8 --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > $L/serve_$n.log 2>&1 &
  local sp=$!
  for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
  timeout 100 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 15 \
      --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen_$n.log 2>&1
  echo "server $n:"; grep -E '^\| [0-9]' $L/loadgen_$n.log
  kill -INT $sp; wait $sp
}
if [ $(( $(date +%s) - t0 )) -lt 330 ]; then srv def X=1; srv mlb3 DOTLM_GEMV=default,mlb=3; fi
wait
echo "t=$(( $(date +%s) - t0 ))s"
tail -2 $L/gate.log
tar czf $OUT/logs.tgz -C $L .
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(fp8 block|int8 W8A8|bf16) +[0-9]+x[0-9]+ +[1248] " $L/gpu_bench.log | cut -c1-80
grep -E "^fp8 block +[0-9]+x[0-9]+ +[5-8] " $L/gpu_bench_m58.log | cut -c1-120
sed -n '/^PDL, late/,$p;/^with PDL/,/^$/p' $L/lab.log
