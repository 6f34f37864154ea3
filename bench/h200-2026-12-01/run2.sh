#!/usr/bin/env bash
# session 15 call 2: silu_actq_v4 + actq diag group: GPU tests, int8 decode diag matrix and A/B
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for t in test_gpu_forward test_gpu_ops; do
  timeout 200 /tmp/r/$t > $OUT/l/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $OUT/l/$t.log)"
done
grep -i "fail" $OUT/l/test_gpu_forward.log | head -5
OUT=$OUT/l tools/dev_e2e_ab.sh int8 "base:;v4off:DOTLM_DISABLE=cuda.silu_actq_v4;i8u4:DOTLM_GEMV=default,i8u=4;mm:DOTLM_GPU_DIAG_SKIP=matmul;mmaq:DOTLM_GPU_DIAG_SKIP=matmul,actq;mmsilu:DOTLM_GPU_DIAG_SKIP=matmul,silu;mmnorm:DOTLM_GPU_DIAG_SKIP=matmul,norm;mmatt:DOTLM_GPU_DIAG_SKIP=matmul,attn,combine;mmrope:DOTLM_GPU_DIAG_SKIP=matmul,qkrope;aq:DOTLM_GPU_DIAG_SKIP=actq;silu:DOTLM_GPU_DIAG_SKIP=silu;norm:DOTLM_GPU_DIAG_SKIP=norm" "base:;v4off:DOTLM_DISABLE=cuda.silu_actq_v4"
OUT=$OUT/l tools/dev_e2e_ab.sh fp8-block "base:;mm:DOTLM_GPU_DIAG_SKIP=matmul;mmnorm:DOTLM_GPU_DIAG_SKIP=matmul,norm;mmatt:DOTLM_GPU_DIAG_SKIP=matmul,attn,combine;norm:DOTLM_GPU_DIAG_SKIP=norm"
cd $OUT && tar czf logs.tgz l && rm -rf l
