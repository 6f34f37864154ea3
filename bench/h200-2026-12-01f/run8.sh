#!/usr/bin/env bash
# session 20 call 8 (the machine of call 7, still warm): bf16 decode A/B at 512 again, four pairs:
# cuda.gemv_unscaled on (default) against DOTLM_DISABLE=cuda.gemv_unscaled
mkdir -p $OUT/l; [ -x /tmp/r/dotlm ] && echo warm-binaries; ls /dev/shm/ 2>/dev/null | head; KEEP=1 OUT=$OUT/l tools/dev_e2e_ab.sh bf16 "on:;off:DOTLM_DISABLE=cuda.gemv_unscaled;on2:;off2:DOTLM_DISABLE=cuda.gemv_unscaled"
