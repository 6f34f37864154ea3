#!/usr/bin/env bash
# session 23 call 6: main as it stands (the prompt attention of 34a520e, the W8A8 split experiment reverted):
# every GPU test, fixtures on cuda, and the SASS opcode gate of the dotlm binary
set -u
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L /tmp/r
t0=$(date +%s)
[ -x /tmp/r/dotlm ] || tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
nvidia-smi --query-gpu=name,uuid --format=csv > $L/gpu.txt 2>&1
for t in test_gpu_ops test_gpu_forward test_gpu_gdn test_gpu_gemv_multi; do
  timeout 200 /tmp/r/$t > $L/$t.log 2>&1; echo "$t rc=$?: $(tail -1 $L/$t.log)"; grep FAIL $L/$t.log | head -5
done
echo "t=$(( $(date +%s) - t0 ))s"
DOTLM_BIN=/tmp/r/dotlm DOTLM_BACKEND=cuda timeout 200 python3 tests/py/test_fixtures.py > $L/fixtures.log 2>&1
echo "fixtures cuda rc=$?: $(tail -1 $L/fixtures.log)"; grep -E "FAIL" $L/fixtures.log | head
timeout 200 tools/gpu_gate.sh --no-ptx --no-hip --sass /tmp/r/dotlm > $L/gate_sass.log 2>&1; echo "gate sass rc=$?: $(tail -1 $L/gate_sass.log)"
grep -E "attn_pf" $L/gate_sass.log | head -4
echo "t=$(( $(date +%s) - t0 ))s"
tar czf $OUT/logs.tgz -C $L .
