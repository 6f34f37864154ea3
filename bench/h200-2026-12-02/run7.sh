#!/usr/bin/env bash
# session 24 call 7: main's final code (the permuted activations for 8-bit
# weights only): test_gpu_gemv_multi, test_gpu_ops, test_gpu_forward,
# test_gpu_gdn, fixtures on cuda, the SASS gate; the server at 8 and 32
# clients (run4's setup)
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
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures.log)"; grep -E "FAIL" $L/fixtures.log | head
timeout 200 tools/gpu_gate.sh --no-ptx --no-hip --sass /tmp/r/dotlm > $L/gate_sass.log 2>&1; echo "gate sass rc=$?: $(tail -1 $L/gate_sass.log)"
wait $gp
echo "t=$(( $(date +%s) - t0 ))s"
/tmp/r/dotlm serve $d --backend cuda --port 8123 --max-seqs 32 --ctx 2048 > $L/serve.log 2>&1 &
sp=$!
for i in $(seq 1 90); do python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8123/health', timeout=2)" >/dev/null 2>&1 && break; sleep 1; done
timeout 120 python3 bench/loadgen.py --url http://127.0.0.1:8123 --concurrency 8,32 --duration 15 \
    --max-tokens 128 --prompt-words 400 --markdown > $L/loadgen.log 2>&1
grep -E '^\| [0-9]' $L/loadgen.log
kill -INT $sp; wait $sp
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
