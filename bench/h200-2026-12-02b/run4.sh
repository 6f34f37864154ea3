#!/usr/bin/env bash
# session 25 call 4: the e4m3 fold widening at M > 2 too (na=1): every test,
# the new batch-invariance test (and, as its negative control, test_gpu_ops
# under DOTLM_GEMV=default,na=0, where batches of 3..8 still take h2: it
# must report rows that differ), fixtures on cuda, test_gpu_gdn, the SASS
# gate; the GEMV table default / fp8=h2; the server at 8 and 32 clients
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
d=/dev/shm/q8b
(timeout 150 python3 tools/make_bench_model.py $d --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1; cp assets/tokenizers/qwen3/* $d/) &
gp=$!
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward test_gpu_gdn; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"; grep FAIL $L/$t.log | head -5
done
DOTLM_GEMV=default,na=0 timeout 200 /tmp/r/test_gpu_ops > $L/test_gpu_ops_na0.log 2>&1
echo "negative control (na=0) rc=$?: $(tail -1 $L/test_gpu_ops_na0.log)"; grep "differ from the row alone" $L/test_gpu_ops_na0.log | head -8
echo "t=$(( $(date +%s) - t0 ))s"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 120 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures.log)"; grep -E "FAIL" $L/fixtures.log | head
timeout 120 tools/gpu_gate.sh --no-ptx --no-hip --sass /tmp/r/dotlm > $L/gate.log 2>&1; echo "gate rc=$?: $(tail -1 $L/gate.log)"
echo "t=$(( $(date +%s) - t0 ))s"
DOTLM_GEMV_VARIANTS="default;default,fp8=h2" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1
echo "gpu_bench rc=$?"; grep -E "copy D2D|fp8 block +(5120x17408|17408x5120|6144x5120) +[1-8] " $L/gpu_bench.log | head -30
sed -n '/multi-weight/,/^$/p' $L/gpu_bench.log | grep fp8
wait $gp
echo "t=$(( $(date +%s) - t0 ))s"
/tmp/r/dotlm serve $d --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > $L/serve.log 2>&1 &
sp=$!
for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
timeout 100 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 15 \
    --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen.log 2>&1
grep -E '^\| [0-9]' $L/loadgen.log
kill -INT $sp; wait $sp
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
