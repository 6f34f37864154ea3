#!/usr/bin/env bash
# session 14 call 7: test_gpu_ops with the DOTLM_GPU_DIAG_SKIP parse check and the fp16 qk_rope tolerance,
# on the seed that failed the 2e-5 bound and on two fresh ones
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
for s in 4767592227251327390 fresh1 fresh2; do
  if [ "${s#fresh}" != "$s" ]; then unset DOTLM_TEST_SEED; else export DOTLM_TEST_SEED=$s; fi
  timeout 120 /tmp/r/test_gpu_ops > $OUT/test_gpu_ops_$s.log 2>&1; echo "test_gpu_ops $s rc=$?: $(grep -m1 'test seed' $OUT/test_gpu_ops_$s.log) $(tail -1 $OUT/test_gpu_ops_$s.log)"
  grep -E "CHECK failed|FAIL" $OUT/test_gpu_ops_$s.log | head -5
  sleep 1
done
