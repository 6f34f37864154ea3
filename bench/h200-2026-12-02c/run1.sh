#!/usr/bin/env bash
# session 26 call 1: main's previous binaries (5256402, .devpack/base.tar.xz
# + lib.tar.xz; both packs do not fit one call's carry), the "before" of
# run2 on the same machine: the GEMV table, single-sequence fp8 decode
# twice, the server at 8 / 32 clients
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/b
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/base.tar.xz -C /tmp/b
tar xJf .devpack/lib.tar.xz -C /tmp/b
export LD_LIBRARY_PATH=/tmp/b/lib
d=/dev/shm/q8b
(timeout 150 python3 tools/make_bench_model.py $d --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1; cp assets/tokenizers/qwen3/* $d/) &
gp=$!
timeout 100 /tmp/b/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_b.log 2>&1
echo "gpu_bench b rc=$?"
echo "t=$(( $(date +%s) - t0 ))s"
wait $gp
echo "t=$(( $(date +%s) - t0 ))s"
for i in 1 2; do
  timeout 60 /tmp/b/dotlm bench --model $d --backend cuda --prompt-len 512 --gen 64 > $L/dec_b$i.log 2>&1; echo "decode b$i: $(grep -E '^decode' $L/dec_b$i.log | tail -1)"
done
/tmp/b/dotlm serve $d --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > $L/serve_base.log 2>&1 &
sp=$!
for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
timeout 100 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 15 \
    --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen_base.log 2>&1
echo "base:"; grep -E '^\| [0-9]' $L/loadgen_base.log
kill -INT $sp; wait $sp
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
grep -E "copy D2D" $L/gpu_bench_b.log
grep -E "^(fp8 block|int8 W8A8|bf16) +[0-9]+x[0-9]+ +[1248] " $L/gpu_bench_b.log | cut -c1-96 | head -40
sed -n '/multi-weight/,/^$/p' $L/gpu_bench_b.log | grep fp8
