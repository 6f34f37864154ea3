#!/usr/bin/env bash
# session 16 call 12: bf16 decode with the K split up to 16384 rows (gate/up split too) against the default (8192)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l /tmp/r
tar xJf .devpack/devrun.tar.xz -C /tmp/r
OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "ks8k:;ks16k:DOTLM_GEMV_KSMAXN=16384" "ks8k:;ks16k:DOTLM_GEMV_KSMAXN=16384"
cd $OUT && tar czf logs.tgz l && rm -rf l
