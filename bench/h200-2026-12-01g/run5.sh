#!/usr/bin/env bash
# session 21 call 5 (the run3 build, main's kernels): registers / stack of the fp8 ring kernels at M = 1 (two and
# three stages), and fp8 decode at 512 with weights of < 8192 rows (q/k/v, o_proj, down) split over 4 warps
# (DOTLM_GEMV_FP8KS4N=8192, an experiment variable of main) against the default 2
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
cuobjdump -res-usage /tmp/r/dotlm 2>/dev/null | grep -A1 -E "gemv_faILi3ELi1ELi[124]E" | grep -E "Function|REG" | paste - - | sed 's/  */ /g' > $L/res_usage.txt
cat $L/res_usage.txt | awk '{print $2, $3, $4}'
timeout 40 /tmp/r/dotlm_gpu_bench --no-sweep --quick > $L/copy.log 2>&1; grep -m1 "copy D2D" $L/copy.log
KEEP=1 OUT=$L tools/dev_e2e_ab.sh fp8-block "ks2:;ks4small:DOTLM_GEMV_FP8KS4N=8192"
tar czf $OUT/logs.tgz -C $L .
