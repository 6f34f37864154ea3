#!/usr/bin/env bash
# session 36 call 1: the weights' L2 evict_first hint, settled in one call.
# Main's pack ($B) against the same tree built with -DDOTLM_GPU_L2EF=1
# (/tmp/rv: dotlm and dotlm_gpu_bench only; every GEMV weight load, the
# register loops' ld.global.nc.L1::no_allocate and the rings' cp.async,
# carries an L2::evict_first cache policy). Every GPU unit test and
# the SASS gate on main's pack; the load forms in both binaries; decode at
# 512 interleaved, three rounds, every format; the GEMV kernel alone in
# both; fp8 decode after 4096.
. bench/lib/device_prelude.sh
dv_init
V=/tmp/rv
mkdir -p $V && tar xJf .devpack/l2ef.tar.xz -C $V && mv $V/dotlm_l2ef $V/dotlm && mv $V/dotlm_gpu_bench_l2ef $V/dotlm_gpu_bench
dv_models fp8-block int8 bf16
dv_gate
# every GPU unit test (the call's tree carries only test_gpu_forward's
# fixtures, see README.md, so not tests/py/test_fixtures.py)
for t in test_gpu_gemv_multi test_gpu_ops test_gpu_forward test_gpu_gdn; do
  timeout 200 "$B/$t" >"$L/$t.log" 2>&1; echo "$t rc=$? $(tail -1 "$L/$t.log")"
done
for b in $B/dotlm $V/dotlm; do
  echo "$b: $(timeout 90 cuobjdump -sass $b 2>/dev/null | grep -oE 'LDG[A-Z0-9._]*|LDGSTS[A-Z0-9._]*' | sort | uniq -c | sort -rn | head -8 | tr '\n' ' ')"
done
dv_models_wait
echo "$(dv_t)"
for round in 1 2 3; do
  for f in fp8-block int8 bf16; do
    echo -n "main "; dv_decode $f
    echo -n "l2ef "; B=$V dv_decode $f
  done
done
echo "$(dv_t)"
DOTLM_GEMV_VARIANTS="default" timeout 150 $B/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_main.log 2>&1; echo "gpu_bench main rc=$?"
DOTLM_GEMV_VARIANTS="default" timeout 150 $V/dotlm_gpu_bench --no-sweep --quick > $L/gpu_bench_l2ef.log 2>&1; echo "gpu_bench l2ef rc=$?"
echo "$(dv_t)"
for round in 1 2; do
  echo -n "main "; dv_decode fp8-block --prompt-len 4096 --gen 32
  echo -n "l2ef "; B=$V dv_decode fp8-block --prompt-len 4096 --gen 32
done
dv_finish
for g in main l2ef; do
  echo "== $g"; grep -E "copy D2D" $L/gpu_bench_$g.log
  grep -E "^(bf16|fp8 block|int8 W8A8) +[0-9]+x[0-9]+ +1 " $L/gpu_bench_$g.log | cut -c1-130
done
