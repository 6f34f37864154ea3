#!/usr/bin/env bash
# session 16 call 11: bf16 M = 1 launch-shape knobs on the three bench shapes (kernel alone; no rebuild)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
DOTLM_GEMV_VARIANTS="default;default,wpb=8;default,u=4;default,u=2;default,r1=1;default,r1=4" timeout 150 /tmp/r/dotlm_gpu_bench --no-sweep > $OUT/l/bench_knobs.log 2>&1; echo "bench knobs rc=$?"
for n in 4096 16384; do DOTLM_GEMV_KSMAXN=$n timeout 100 /tmp/r/dotlm_gpu_bench --no-sweep > $OUT/l/bench_ksmaxn$n.log 2>&1; echo "bench ksmaxn=$n rc=$?"; done
echo "== summary =="
for f in bench_knobs bench_ksmaxn4096 bench_ksmaxn16384; do echo "-- $f"; grep -E "^bf16 .* 1  " $OUT/l/$f.log; grep -E "^bf16 .*q/k/v.* 1 " $OUT/l/$f.log | head -1; done
cd $OUT && tar czf logs.tgz l && rm -rf l
