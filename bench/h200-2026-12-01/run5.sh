#!/usr/bin/env bash
# session 15 call 5: bf16 GEMV launch-shape knobs at M = 1 (o_proj and q/k/v lose the most in a decode step)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
export LD_LIBRARY_PATH=/tmp/r/lib
OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "base:;r1x2:DOTLM_GEMV=default,r1=2;wpb8:DOTLM_GEMV=default,wpb=8;ks4096:DOTLM_GEMV_KSMAXN=4096;u2:DOTLM_GEMV=default,u=2;r1x2wpb8:DOTLM_GEMV=default,r1=2,wpb=8"
cd $OUT && tar czf logs.tgz l && rm -rf l
