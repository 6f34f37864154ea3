#!/usr/bin/env bash
# session 22 call 1: the L2 prefetch of the next GEMV's weights (cuda.l2_prefetch, DOTLM_GPU_L2PF):
# tests, then decode at 512 with it off / on (24 MiB per hint, the build's default) / other caps,
# request forms and hint kinds (fp8), and off / on for bf16
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
timeout 40 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/copy.log 2>&1; grep -m1 "copy D2D" $L/copy.log
for t in test_gpu_ops test_gpu_forward; do
  timeout 150 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"
done
grep -i "l2\|FAIL" $L/test_gpu_ops.log | head -5
echo "t=$(( $(date +%s) - t0 ))s"
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "off:DOTLM_GPU_L2PF=off;on24:;mb8:DOTLM_GPU_L2PF=mb=8;mb40:DOTLM_GPU_L2PF=mb=40;line:DOTLM_GPU_L2PF=mode=line;s1:DOTLM_GPU_L2PF=slots=1;s2:DOTLM_GPU_L2PF=slots=2;s4:DOTLM_GPU_L2PF=slots=4"
echo "t=$(( $(date +%s) - t0 ))s"
/tmp/r/dotlm bench --model /dev/shm/q8b-fp8-block --backend cuda --prompt-len 64 --gen 8 --stats > $L/stats.log 2>&1; grep -E "l2_prefetch|cuda.pdl " $L/stats.log
rm -rf /dev/shm/q8b-fp8-block
[ $(( $(date +%s) - t0 )) -lt 380 ] && OUT=$L tools/dev_e2e_ab.sh bf16 "off:DOTLM_GPU_L2PF=off;on24:;mb40:DOTLM_GPU_L2PF=mb=40"
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
