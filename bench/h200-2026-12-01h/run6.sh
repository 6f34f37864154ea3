#!/usr/bin/env bash
# session 22 call 6: the decode attention with a lane per key (cuda.attention.keylanes, k_attn_kl.cu; on by
# default for grids of >= 1024 positions): GPU tests, fixtures on cuda with it forced on for every length
# (DOTLM_GPU_ATTN_KL_MIN=0), decode A/B against DOTLM_GPU_ATTN_KL=0 after 4096 (fp8, int8, bf16) and forced
# on after 512 (fp8)
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
(timeout 150 python3 tools/make_bench_model.py /dev/shm/q8b-fp8-block --preset qwen3-8b --format fp8-block > /dev/null 2>&1; echo "gen fp8 rc=$?") &
for t in test_gpu_ops test_gpu_forward; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"
done
grep -E "FAIL|keylanes" $L/test_gpu_ops.log | head -8
DOTLM_GPU_ATTN_KL_MIN=0 DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 200 python3 tests/py/test_fixtures.py > $L/fixtures_kl.log 2>&1
echo "fixtures cuda keylanes forced rc=$?: $(tail -1 $L/fixtures_kl.log)"
wait
echo "t=$(( $(date +%s) - t0 ))s"
timeout 40 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/copy.log 2>&1; grep -m1 "copy D2D" $L/copy.log
KEEP=1 OUT=$L PLEN=4096 tools/dev_e2e_ab.sh fp8-block "kl:;split:DOTLM_GPU_ATTN_KL=0"
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "split:;kl:DOTLM_GPU_ATTN_KL_MIN=0"
echo "t=$(( $(date +%s) - t0 ))s"
/tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 2048 --gen 8 --stats > $L/stats.log 2>&1; grep -E "keylanes|attention.split " $L/stats.log
rm -rf /dev/shm/q8b-fp8-block
[ $(( $(date +%s) - t0 )) -lt 330 ] && OUT=$L PLEN=4096 tools/dev_e2e_ab.sh int8 "kl:;split:DOTLM_GPU_ATTN_KL=0"
echo "t=$(( $(date +%s) - t0 ))s"
[ $(( $(date +%s) - t0 )) -lt 400 ] && OUT=$L PLEN=4096 tools/dev_e2e_ab.sh bf16 "kl:;split:DOTLM_GPU_ATTN_KL=0"
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
