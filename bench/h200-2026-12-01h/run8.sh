#!/usr/bin/env bash
# session 22 call 8: the run7 build (the key-lane attention as committed): test_gpu_forward, fixtures on cuda
# with the key-lane kernel forced on for every length, int8 decode A/B after 4096 against DOTLM_GPU_ATTN_KL=0
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
(timeout 150 python3 tools/make_bench_model.py /dev/shm/q8b-int8 --preset qwen3-8b --format int8 > /dev/null 2>&1; echo "gen int8 rc=$?") &
timeout 100 /tmp/r/test_gpu_forward > $L/test_gpu_forward.log 2>&1; echo "test_gpu_forward rc=$?: $(tail -1 $L/test_gpu_forward.log)"
DOTLM_GPU_ATTN_KL_MIN=0 DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 100 python3 tests/py/test_fixtures.py > $L/fixtures_kl.log 2>&1
echo "fixtures cuda keylanes forced rc=$?: $(tail -1 $L/fixtures_kl.log)"
wait
echo "t=$(( $(date +%s) - t0 ))s"
OUT=$L PLEN=4096 tools/dev_e2e_ab.sh int8 "kl:;split:DOTLM_GPU_ATTN_KL=0"
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
