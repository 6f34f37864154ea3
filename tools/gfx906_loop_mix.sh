#!/usr/bin/env bash
# Instruction mix of a kernel's hot loop on gfx906, from the code object
# Debian's hipcc makes (no AMD GPU needed). For each kernel whose mangled
# name matches REGEX: the innermost loop with the most instructions (the
# address range between a backward branch's target and the branch), with
# its vector ALU (v_*), scalar (s_*), vector memory (global_* / buffer_*),
# LDS (ds_*) and dot-product (v_dot*) instruction counts per iteration.
# Usage: tools/gfx906_loop_mix.sh FILE.cu REGEX [REGEX...]
#   e.g. tools/gfx906_loop_mix.sh src/backend/gpu/k_matmul_int8.cu '^_Z12dl_k_i8_gemvILi1ELi2E'
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
SRCF=$1; shift
BUNDLER=$(command -v clang-offload-bundler || ls /usr/lib/llvm-*/bin/clang-offload-bundler 2>/dev/null | tail -1)
OBJDUMP=$(command -v llvm-objdump || ls /usr/lib/llvm-*/bin/llvm-objdump 2>/dev/null | tail -1)
command -v hipcc >/dev/null || { echo "gfx906_loop_mix: hipcc not found (apt-get install hipcc)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
hipcc -x hip --offload-arch=gfx906 -std=c++17 -O3 -DDOTLM_HIP=1 -I"$ROOT/src" --cuda-device-only -c "$SRCF" \
  -o "$TMP/k.bundle" 2> >(grep -v rocm_agent_enumerator >&2)
tgt=$("$BUNDLER" --list --type=o --input="$TMP/k.bundle" 2>/dev/null | grep gfx906 | head -1)
if [ -n "$tgt" ]; then
  "$BUNDLER" --unbundle --type=o --input="$TMP/k.bundle" --targets="$tgt" --output="$TMP/k.co" 2>/dev/null
else
  cp "$TMP/k.bundle" "$TMP/k.co"
fi
"$OBJDUMP" -d --mcpu=gfx906 "$TMP/k.co" > "$TMP/k.dis"
for re in "$@"; do
  awk -v re="$re" -f "$ROOT/tools/lib/gfx906_listing.awk" -f /dev/stdin "$TMP/k.dis" <<'AWK'
    function want(name) { return name ~ re }
    function done(name,   b, i, lo, hi, best, bl, bh, c, x, nin) {
      best = -1
      # innermost: no other loop strictly inside; the longest such
      for (b = 1; b <= nb; b++) {
        lo = bt[b]; hi = bf[b]; nin = 0
        for (x = 1; x <= nb; x++) if (x != b && bt[x] >= lo && bf[x] <= hi && (bt[x] > lo || bf[x] < hi)) nin++
        if (nin) continue
        c = 0; for (i = 1; i <= n; i++) if (ad[i] >= lo && ad[i] <= hi) c++
        if (c > best) { best = c; bl = lo; bh = hi }
      }
      if (best < 0) { printf "%s: no loop\n", name; return }
      split("", cnt)
      for (i = 1; i <= n; i++) if (ad[i] >= bl && ad[i] <= bh) {
        if (op[i] ~ /^v_dot/) cnt["dot"]++
        if (op[i] ~ /^v_/) cnt["valu"]++
        else if (op[i] ~ /^s_/) cnt["salu"]++
        else if (op[i] ~ /^(global|buffer|flat|scratch)_/) cnt["vmem"]++
        else if (op[i] ~ /^ds_/) cnt["lds"]++
        if (op[i] ~ /^(global|buffer|flat)_load_dwordx4/) cnt["ld16"]++
      }
      printf "%s\n  loop of %d instructions: VALU %d (dot %d), SALU %d, VMEM %d (16-byte loads %d), LDS %d\n",
             name, best, cnt["valu"], cnt["dot"], cnt["salu"], cnt["vmem"], cnt["ld16"], cnt["lds"]
    }
AWK
done
