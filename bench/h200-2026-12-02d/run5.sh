#!/usr/bin/env bash
# session 27 call 5: the final code (twins opt-in, no rows rule for them,
# mlb=3 default): every GPU test, fixtures on cuda, the SASS gate, the GEMV
# table, fp8 decode at 512 twice and with DOTLM_GPU_GEMV_TWIN=1 once
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
B=/tmp/r; export LD_LIBRARY_PATH=$B/lib
(timeout 200 python3 tools/make_bench_model.py /dev/shm/m_f8 --preset qwen3-8b --format fp8-block > $L/gen_f8.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_f8/) &
gp=$!
(timeout 280 tools/gpu_gate.sh --no-ptx --no-hip --sass $B/dotlm > $L/gate.log 2>&1; echo "gate rc=$?" >> $L/gate.log) &
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward test_gpu_gdn; do
  timeout 200 $B/$t > $L/$t.log 2>&1; echo "$t rc=$? $(tail -1 $L/$t.log)"
done
timeout 100 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench.log 2>&1; echo "bench rc=$?"
wait $gp
for v in a b twin; do
  if [ $v = twin ]; then e=DOTLM_GPU_GEMV_TWIN=1; else e=X=1; fi
  env $e timeout 60 $B/dotlm bench --model /dev/shm/m_f8 --backend cuda --prompt-len 512 --gen 64 > $L/dec_$v.log 2>&1
  echo "decode $v: $(grep -E '^decode' $L/dec_$v.log | tail -1)"
done
DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
echo "fixtures rc=$? $(tail -1 $L/fixtures.log)"
wait
echo "t=$(( $(date +%s) - t0 ))s"
tail -2 $L/gate.log
tar czf $OUT/logs.tgz -C $L .
grep -E "copy D2D" $L/gpu_bench.log
grep -E "^(fp8 block|int8 W8A8|bf16) +[0-9]+x[0-9]+ +1 " $L/gpu_bench.log | cut -c1-80
