#!/usr/bin/env bash
# session 26 call 3: main's previous binaries (5256402) again, the "before"
# of run4 (the int8 GEMV's scattered warp sums; the next call, on the
# machine if still held): the GEMV table, bf16 and int8 W8A8 decode twice
# each, the int8 server at 8 / 32 clients
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/b
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/base.tar.xz -C /tmp/b
tar xJf .devpack/lib.tar.xz -C /tmp/b
B=/tmp/b; export LD_LIBRARY_PATH=$B/lib
for f in bf16 int8; do
  (timeout 200 python3 tools/make_bench_model.py /dev/shm/m_$f --preset qwen3-8b --format $f > $L/gen_$f.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_$f/) &
done
timeout 100 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1
echo "gpu_bench rc=$?"
wait
echo "t=$(( $(date +%s) - t0 ))s"
for f in bf16 int8; do for i in 1 2; do
  timeout 60 $B/dotlm bench --model /dev/shm/m_$f --backend cuda --prompt-len 512 --gen 64 > $L/dec_${f}_$i.log 2>&1; echo "decode $f $i: $(grep -E '^decode' $L/dec_${f}_$i.log | tail -1)"
done; done
$B/dotlm serve /dev/shm/m_int8 --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > $L/serve_int8.log 2>&1 &
sp=$!
for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
timeout 100 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 15 \
    --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen_int8.log 2>&1
echo "int8 server:"; grep -E '^\| [0-9]' $L/loadgen_int8.log
kill -INT $sp; wait $sp
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(int8 W8A8|bf16) +[0-9]+x[0-9]+ +[1248] " $L/gpu_bench.log | cut -c1-96 | head -40
sed -n '/multi-weight/,/^$/p' $L/gpu_bench.log | grep -E "int8|bf16"
