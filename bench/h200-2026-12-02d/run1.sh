#!/usr/bin/env bash
# session 27 call 1 (main 299e0d8): where a single-sequence W8A8 decode
# step's time goes (DOTLM_GPU_DIAG_SKIP groups, per-kernel profile), the
# same for fp8, and the checks last session did not re-run on its final
# binaries: test_gpu_forward, test_gpu_gdn, fixtures on cuda, SASS gate
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
tar xJf .devpack/devrun.tar.xz -C /tmp/r
B=/tmp/r; export LD_LIBRARY_PATH=$B/lib
for f in int8 fp8-block; do
  (timeout 200 python3 tools/make_bench_model.py /dev/shm/m_$f --preset qwen3-8b --format $f > $L/gen_$f.log 2>&1; cp assets/tokenizers/qwen3/* /dev/shm/m_$f/) &
done
timeout 120 $B/test_gpu_forward > $L/t_forward.log 2>&1; echo "forward rc=$? $(tail -1 $L/t_forward.log)"
timeout 120 $B/test_gpu_gdn > $L/t_gdn.log 2>&1; echo "gdn rc=$? $(tail -1 $L/t_gdn.log)"
wait
echo "t=$(( $(date +%s) - t0 ))s"
dec() { # name format env...
  local n=$1 f=$2; shift 2
  env "$@" timeout 60 $B/dotlm bench --model /dev/shm/m_$f --backend cuda --prompt-len 512 --gen 64 > $L/dec_$n.log 2>&1
  echo "$n: $(grep -E '^decode' $L/dec_$n.log | tail -1)"
}
dec i8_base int8 X=1
for s in norm qkrope attn combine actq silu matmul "actq,silu" "norm,qkrope,attn,combine,actq,silu"; do
  dec "i8_skip_${s//,/+}" int8 DOTLM_GPU_DIAG_SKIP=$s
done
dec i8_base2 int8 X=1
dec i8_prof int8 DOTLM_GPU_PROFILE=1
dec f8_base fp8-block X=1
for s in matmul "norm,qkrope,attn,combine"; do dec "f8_skip_${s//,/+}" fp8-block DOTLM_GPU_DIAG_SKIP=$s; done
dec f8_prof fp8-block DOTLM_GPU_PROFILE=1
echo "t=$(( $(date +%s) - t0 ))s"
if [ $(( $(date +%s) - t0 )) -lt 330 ]; then
  DOTLM_BIN=$B/dotlm DOTLM_BACKEND=cuda timeout 150 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
  echo "fixtures rc=$? $(tail -2 $L/fixtures.log | tr '\n' ' ')"
fi
timeout 60 tools/gpu_gate.sh --no-ptx --no-hip --sass $B/dotlm > $L/gate.log 2>&1; echo "gate rc=$? $(tail -1 $L/gate.log)"
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
for f in i8_prof f8_prof; do echo "== $f"; sed -n '/GPU profile/,/^model/p' $L/dec_$f.log | head -24; done
