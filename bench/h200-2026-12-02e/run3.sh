#!/usr/bin/env bash
# session 28 call 3: the final code (the twin layout in one header, the
# 48-register cap for the M = 1 ring at <= 2 rows, no rows rule): every GPU
# test, fixtures on cuda, the SASS gate, the GEMV table, decode at 512 for
# fp8 / int8 (twice) and bf16
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
B=/tmp/r; export LD_LIBRARY_PATH=$B/lib
(for f in fp8-block int8 bf16; do timeout 250 python3 tools/make_bench_model.py /dev/shm/m_$f --preset qwen3-8b --format $f > $L/gen_$f.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_$f/; done) &
gp=$!
(timeout 280 tools/gpu_gate.sh --no-ptx --no-hip --sass $B/dotlm > $L/gate.log 2>&1; echo "gate rc=$?" >> $L/gate.log) &
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward test_gpu_gdn; do
  timeout 200 $B/$t > $L/$t.log 2>&1; echo "$t rc=$? $(tail -1 $L/$t.log)"
done
DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
echo "fixtures rc=$? $(tail -1 $L/fixtures.log)"
timeout 120 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "bench rc=$?"
wait $gp
echo "t=$(( $(date +%s) - t0 ))s"
for f in fp8-block int8 fp8-block int8 bf16; do
  timeout 90 $B/dotlm bench --model /dev/shm/m_$f --backend cuda --prompt-len 512 --gen 64 > $L/dec_$f.$(date +%s%N).log 2>&1
  echo "decode $f: $(grep -hE '^decode' $(ls -t $L/dec_$f.*.log | head -1) | tail -1)"
done
wait
echo "t=$(( $(date +%s) - t0 ))s"
tail -2 $L/gate.log
tar czf $OUT/logs.tgz -C $L .
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(fp8 block|int8 W8A8|bf16) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-110
