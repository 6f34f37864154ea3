#!/usr/bin/env bash
# session 23 call 1: the register-tile prefill attention (cuda.attention.prefill, k_attn_pf.cu) and the
# prefill chunk (--prefill-chunk, GPU default 2048): GPU tests, fixtures on cuda, prompt tok/s by chunk
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
(timeout 150 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > $L/gen.log 2>&1; echo "gen fp8 rc=$?") &
timeout 200 /tmp/r/test_gpu_ops > $L/test_gpu_ops.log 2>&1; echo "test_gpu_ops rc=$?: $(tail -1 $L/test_gpu_ops.log)"
grep -E "FAIL" $L/test_gpu_ops.log | head -20
wait
echo "t=$(( $(date +%s) - t0 ))s"
B() { # label env... -- args
  local lab=$1; shift
  env "$@" timeout 150 /tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --gen 8 $ARGS > $L/b_$lab.log 2>&1
  echo "$lab: $(grep -E '^prompt' $L/b_$lab.log | sed 's/prompt: //') | $(grep -E '^decode' $L/b_$lab.log | sed 's/decode: //')"
}
for P in 4096 512; do
  for c in 256 512 1024 2048 4096; do
    [ $c -gt $P ] && continue
    ARGS="--prompt-len $P --prefill-chunk $c" B "P${P}_c${c}" X=1
  done
  ARGS="--prompt-len $P --prefill-chunk 256" B "P${P}_c256_tiled" DOTLM_DISABLE=cuda.attention.prefill
  ARGS="--prompt-len $P" B "P${P}_default_tiled" DOTLM_DISABLE=cuda.attention.prefill
done
echo "t=$(( $(date +%s) - t0 ))s"
timeout 120 /tmp/r/test_gpu_forward > $L/test_gpu_forward.log 2>&1; echo "test_gpu_forward rc=$?: $(tail -1 $L/test_gpu_forward.log)"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures.log)"; grep FAIL $L/fixtures.log | head
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
