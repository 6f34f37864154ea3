#!/usr/bin/env bash
# Opcode gate for the GPU kernels (src/backend/gpu/*.cu). Per kernel:
#   NVIDIA PTX (nvcc, compute_90): forbid mma / wmma / wgmma;
#     kernels named dl_k_i8_* must contain dp4a, dl_k_h2_* fma.rn.f16x2.
#   AMD gfx906 (hipcc, code object disassembled with llvm-objdump): forbid
#     v_mfma*, any fp8/bf8 convert, v_dot2_f32_bf16; dl_k_i8_* must contain
#     v_dot4_i32_i8, dl_k_h2_* v_dot2_f32_f16.
#   --sass BIN...: NVIDIA machine code of built binaries (cuobjdump
#     --dump-sass; needs a toolkit with cuobjdump, e.g. on the GPU machine):
#     forbid HMMA/HGMMA/IMMA/QGMMA (and BMMA/DMMA/OMMA); dl_k_i8_* must contain
#     IDP4A, dl_k_h2_* HFMA2.
#   Determinism: kernels named dl_k_gdn_* (Gated DeltaNet: recurrence,
#     chunked form, conv, norms) contain no atomic instruction of any kind
#     (PTX atom / red, gfx906 global / flat / buffer atomics and LDS
#     read-modify-write ops, SASS ATOM / ATOMS / ATOMG / RED): every sum has
#     one fixed order.
#   gfx906 registers: per kernel, the VGPRs, VGPR spills and scratch bytes
#     of the code object's metadata, and the scratch loads/stores inside its
#     loops (the address ranges of its backward branches). A kernel fails
#     when it spills or touches scratch in a loop, unless its family is in
#     RES_EXEMPT below (each with the reason, printed); a table per family
#     is printed (--res-all: one line per kernel).
# Options: --no-ptx, --no-hip (skip a part), --require-hip (fail when hipcc
# is missing instead of skipping). Exit 1 on any violation.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC="${GPU_GATE_SRC:-$ROOT/src/backend/gpu}"  # override only to self-test the gate
DO_PTX=1 DO_HIP=1 REQ_HIP=0 RES_ALL=0
SASS_BINS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-ptx) DO_PTX=0 ;;
    --no-hip) DO_HIP=0 ;;
    --require-hip) REQ_HIP=1 ;;
    --res-all) RES_ALL=1 ;;
    --sass) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do SASS_BINS+=("$1"); shift; done; continue ;;
    *) echo "gpu_gate: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAIL=0

# check_listing FILE KIND: FILE holds "kernel<TAB>instruction" lines.
# KIND selects the rule set. Prints one line per kernel, sets FAIL.
check_listing() {
  local file=$1 kind=$2 forbid i8 h2 atom
  case $kind in
    ptx)  forbid='^(mma|wmma|wgmma)([.]|$)'; i8='^dp4a'; h2='^fma[.]rn([.][a-z]+)?[.]f16x2'
          atom='^(atom|red)([.]|$)' ;;
    hip)  forbid='^(v_mfma|v_smfma|v_cvt_[a-z0-9_]*(fp8|bf8)|v_cvt_pk_[a-z0-9_]*(fp8|bf8)|v_dot2_f32_bf16|v_dot2c_f32_bf16)'; i8='^v_dot4_i32_i8'; h2='^v_dot2_f32_f16'
          atom='^((global|flat|buffer)_atomic|ds_(add|sub|rsub|inc|dec|min|max|and|or|xor|mskor|wrxchg|cmpst|cmpswap|condxchg|fmin|fmax))' ;;
    sass) forbid='^(HMMA|HGMMA|IMMA|QGMMA|BMMA|DMMA|OMMA|UTCHMMA|UTCQMMA)'; i8='^IDP(4A|[.]4A)'; h2='^HFMA2'
          atom='^(ATOM|ATOMS|ATOMG|RED)([.]|$)' ;;
  esac
  awk -F'\t' -v forbid="$forbid" -v i8="$i8" -v h2="$h2" -v atom="$atom" -v kind="$kind" '
    { k=$1; ins=$2; seen[k]=1; n[k]++
      if (ins ~ forbid) { bad[k]++; badins[k]=ins }
      if (k ~ /dl_k_gdn_/ && ins ~ atom) { bad[k]++; badins[k]=ins " (atomic in a Gated DeltaNet kernel)" }
      if (ins ~ i8) ni8[k]++
      if (ins ~ h2) nh2[k]++ }
    END {
      fail=0; nk=0; ci8=0; ch2=0
      for (k in seen) {
        nk++; st="ok"; note=""
        if (bad[k]) { st="FAIL"; note="forbidden " badins[k] " x" bad[k] }
        if (k ~ /dl_k_i8_/) { ci8++; if (!ni8[k]) { st="FAIL"; note=note " missing int8 dot" } }
        if (k ~ /dl_k_h2_/) { ch2++; if (!nh2[k]) { st="FAIL"; note=note " missing fp16 dot" } }
        if (st=="FAIL") fail=1
        name=k; if (length(name) > 70) name=substr(name,1,67) "..."
        printf "  %-4s %-5s %-70s ins=%-6d i8dot=%-4d f16dot=%-4d %s\n", st, kind, name, n[k], ni8[k]+0, nh2[k]+0, note
      }
      if (nk == 0) { print "  FAIL " kind ": no kernels found"; fail=1 }
      if (ci8 == 0) { print "  FAIL " kind ": no dl_k_i8_* kernel found"; fail=1 }
      if (ch2 == 0) { print "  FAIL " kind ": no dl_k_h2_* kernel found"; fail=1 }
      exit fail
    }' "$file" > "$TMP/report.txt"
  local rc=$?
  sort -k3 "$TMP/report.txt"
  [ $rc = 0 ] || FAIL=1
}

# The per-file compiles of both targets run in one pool of GPU_GATE_JOBS
# (default: the CPU count), largest file first (k_matmul_float.cu takes
# most of the time on either target), each writing $TMP/<kind>.<file>.tsv,
# or its error into $TMP/<kind>.<file>.fail; the listings are then joined
# in file order, so the report does not depend on the schedule.
JOBS=${GPU_GATE_JOBS:-$(nproc 2>/dev/null || echo 2)}
run_pool() { # KIND...: KIND_one FILE for every .cu in $SRC and KIND, at most $JOBS at once
  local f k n=0
  for f in $(ls -S "$SRC"/*.cu); do
    for k in "$@"; do
      "${k}_one" "$f" &
      n=$((n + 1))
      if [ $n -ge "$JOBS" ]; then wait -n; n=$((n - 1)); fi
    done
  done
  wait
}
join_listings() { # KIND OUT: the files' listings in order; failures printed, FAIL set
  local kind=$1 out=$2 f b
  : > "$out"
  for f in "$SRC"/*.cu; do
    b=$(basename "$f" .cu)
    if [ -f "$TMP/$kind.$b.fail" ]; then cat "$TMP/$kind.$b.fail"; FAIL=1; continue; fi
    cat "$TMP/$kind.$b.tsv" >> "$out"
  done
}

ptx_one() {
  local f=$1 b
  b=$(basename "$f" .cu)
  if ! nvcc -std=c++17 -O3 -I"$ROOT/src" -arch=compute_90 --ptx "$f" -o "$TMP/$b.ptx" 2> "$TMP/ptx.$b.err"; then
    { cat "$TMP/ptx.$b.err"; echo "  FAIL ptx: $b.cu does not compile"; } > "$TMP/ptx.$b.fail"; return
  fi
  # one line per instruction: entry name <TAB> opcode (predicates stripped)
  awk '/\.entry[ \t]+[A-Za-z_0-9]+/ { match($0, /\.entry[ \t]+[A-Za-z_0-9]+/); e=substr($0, RSTART, RLENGTH); sub(/\.entry[ \t]+/, "", e); cur=e; next }
       cur != "" && /^[ \t]+\{?[ \t]*(@!?%[a-z0-9]+[ \t]+)?[a-z][a-z0-9_.]*/ {
         s=$0; sub(/^[ \t]+/, "", s); sub(/^\{[ \t]*/, "", s); sub(/^@!?%[a-z0-9]+[ \t]+/, "", s); split(s, a, /[ \t;]/);
         if (a[1] !~ /^\./) print cur "\t" a[1] }' "$TMP/$b.ptx" > "$TMP/ptx.$b.tsv"
}

hip_one() {
  local f=$1 b tgt
  b=$(basename "$f" .cu)
  if ! hipcc -x hip --offload-arch=gfx906 -std=c++17 -O3 -DDOTLM_HIP=1 -I"$ROOT/src" --cuda-device-only -c "$f" \
       -o "$TMP/$b.bundle" 2> "$TMP/hip.$b.err"; then
    { grep -v rocm_agent_enumerator "$TMP/hip.$b.err" | head -20; echo "  FAIL hip: $b.cu does not compile"; } > "$TMP/hip.$b.fail"
    return
  fi
  tgt=$("$BUNDLER" --list --type=o --inputs="$TMP/$b.bundle" 2>/dev/null | grep gfx906 | head -1)
  if [ -n "$tgt" ]; then
    "$BUNDLER" --unbundle --type=o --inputs="$TMP/$b.bundle" --targets="$tgt" --outputs="$TMP/$b.co" 2> "$TMP/hip.$b.uerr" ||
      { { grep -v deprecated "$TMP/hip.$b.uerr"; echo "  FAIL hip: cannot unbundle $b"; } > "$TMP/hip.$b.fail"; return; }
  else
    cp "$TMP/$b.bundle" "$TMP/$b.co" # already a plain code object
  fi
  "$OBJDUMP" -d --mcpu=gfx906 "$TMP/$b.co" > "$TMP/$b.dis" ||
    { echo "  FAIL hip: cannot disassemble $b" > "$TMP/hip.$b.fail"; return; }
  awk '/^[0-9a-f]+ <[^>]+>:$/ { s=$0; sub(/^[0-9a-f]+ </, "", s); sub(/>:$/, "", s); cur=s; next }
       cur != "" && /^[ \t]+([sv]|ds|global|flat|buffer)_[a-z0-9_]+/ { s=$0; sub(/^[ \t]+/, "", s); split(s, a, /[ \t]/); print cur "\t" a[1] }' \
    "$TMP/$b.dis" > "$TMP/hip.$b.tsv"
  # registers: kernel <TAB> vgprs <TAB> vgpr spills <TAB> scratch bytes <TAB> scratch ops in loops
  "$READELF" --notes "$TMP/$b.co" > "$TMP/$b.notes" 2> /dev/null ||
    { echo "  FAIL hip: cannot read the metadata of $b" > "$TMP/hip.$b.fail"; return; }
  awk -f "$ROOT/tools/lib/gfx906_listing.awk" -f "$TMP/loops.awk" "$TMP/$b.dis" > "$TMP/$b.loops"
  awk -F'\t' 'FNR == NR { lp[$1] = $2; next }
       function put() { if (nm != "") print nm "\t" v "\t" sp "\t" pr "\t" (nm in lp ? lp[nm] : 0); nm = "" }
       /^  - / { put() }
       /^    \.name:/ { nm = $0; sub(/^    \.name: */, "", nm) }
       /^    \.vgpr_count:/ { v = $0; sub(/.*: */, "", v) }
       /^    \.vgpr_spill_count:/ { sp = $0; sub(/.*: */, "", sp) }
       /^    \.private_segment_fixed_size:/ { pr = $0; sub(/.*: */, "", pr) }
       END { put() }' "$TMP/$b.loops" "$TMP/$b.notes" > "$TMP/hipres.$b.tsv"
}

# loops.awk (with tools/lib/gfx906_listing.awk): per kernel the number of
# scratch loads/stores (gfx906: MUBUF buffer_* ops, which dotlm's kernels use
# for nothing else, or scratch_*) that lie inside a loop.
cat > "$TMP/loops.awk" <<'AWK'
function want(name) { return 1 }
function done(name,   i, j, c) {
  c = 0
  for (i = 1; i <= n; i++) if (op[i] ~ /^(buffer|scratch)_(load|store)_/) for (j = 1; j <= nb; j++) if (ad[i] >= bt[j] && ad[i] <= bf[j]) { c++; break }
  print name "\t" c
}
AWK

# Kernels allowed to spill or to use scratch in a loop on gfx906, with the
# reason: "regex<TAB>reason" lines, the regex matched against the mangled
# name (so a template instance, or with a bare prefix a whole family).
RES_EXEMPT='^_Z12dl_k_gemv_fpI	the software-pipelined K loop (knob loop=1|2, not a default): 4 rows x 4 vectors need more than 256 VGPRs
^_Z12dl_k_attn_klILi[48]E	key-lane attention at head_dim 256 / 512 (8 or 16 halves per lane on 64-lane wavefronts; head_dim 128, the DPL = 2 forms, fit)
^_Z13dl_k_attn_decILi(1ELi1ELi4|0ELi4ELi2)E	split-KV decode attention held to 2 wavefronts per SIMD (DA_BOUNDS) at GQA 4: the fp16-KV form needs ~134 VGPRs and spills 6 (1 scratch op per ~1070-instruction key-loop iteration), the f32-KV CPL 2 form spills 4
^_Z14dl_k_gdn_cscanI	Gated DeltaNet chunked scan (prompts of hybrid models): the per-lane chunk state exceeds 256 VGPRs'

# check_res FILE: FILE holds "kernel<TAB>vgprs<TAB>spills<TAB>scratch<TAB>loop scratch ops".
check_res() {
  printf '%s\n' "$RES_EXEMPT" > "$TMP/res_exempt.tsv"
  awk -F'\t' -v all=$RES_ALL '
    function fam(k,   n, l) { if (k ~ /^_Z[0-9]+/) { match(k, /^_Z[0-9]+/); l = substr(k, 3, RLENGTH - 2) + 0; return substr(k, RLENGTH + 1, l) } return k }
    function occ(v) { v = int((v + 3) / 4) * 4; if (v < 4) v = 4; v = int(256 / v); return v > 10 ? 10 : v }
    FNR == NR { nx++; xre[nx] = $1; xwhy[nx] = $2; next }
    { f = fam($1); nk[f]++; if ($2 > mv[f]) mv[f] = $2; o = occ($2); if (!(f in mo) || o < mo[f]) mo[f] = o
      if ($3 > 0) nsp[f]++; if ($4 > 0) nsc[f]++; if ($5 > 0) nlp[f]++
      if (all) printf "  res  %-70s vgpr=%-3d waves/SIMD=%-2d spill=%-4d scratch=%-5d loop-scratch-ops=%d\n", substr($1, 1, 70), $2, o, $3, $4, $5
      if ($3 > 0 || $5 > 0) {
        x = 0; for (i = 1; i <= nx; i++) if ($1 ~ xre[i]) { x = i; break }
        if (x) exn[x]++
        else { bad++; printf "  FAIL res  %s: %d VGPRs spilled, %d scratch ops in a loop (gfx906)\n", $1, $3, $5 } } }
    END {
      printf "  %-28s %8s %9s %15s %13s %14s %18s\n", "family (gfx906)", "kernels", "max VGPR", "min waves/SIMD", "with spills", "with scratch", "scratch in a loop"
      for (f in nk) printf "  %-28s %8d %9d %15d %13d %14d %18d\n", f, nk[f], mv[f], mo[f], nsp[f], nsc[f], nlp[f] | "sort"
      close("sort")
      for (i = 1; i <= nx; i++) if (exn[i]) printf "  exempt (%d kernels): %s\n", exn[i], xwhy[i]
      exit bad > 0
    }' "$TMP/res_exempt.tsv" "$1"
  [ $? = 0 ] || FAIL=1
}

KINDS=()
if [ $DO_PTX = 1 ]; then
  if ! command -v nvcc >/dev/null; then echo "gpu_gate: nvcc not found" >&2; exit 1; fi
  KINDS+=(ptx)
fi
if [ $DO_HIP = 1 ]; then
  if ! command -v hipcc >/dev/null; then
    if [ $REQ_HIP = 1 ]; then echo "  FAIL hip: hipcc not found"; FAIL=1
    else echo "== HIP: hipcc not found, skipped (use --require-hip to fail) =="; fi
  else
    BUNDLER=$(command -v clang-offload-bundler || ls /usr/lib/llvm-*/bin/clang-offload-bundler 2>/dev/null | tail -1)
    OBJDUMP=$(command -v llvm-objdump || ls /usr/lib/llvm-*/bin/llvm-objdump 2>/dev/null | tail -1)
    READELF=$(command -v llvm-readelf || ls /usr/lib/llvm-*/bin/llvm-readelf 2>/dev/null | tail -1)
    KINDS=(hip "${KINDS[@]}")
  fi
fi
[ ${#KINDS[@]} -gt 0 ] && run_pool "${KINDS[@]}"
for k in ptx hip; do
  case " ${KINDS[*]} " in *" $k "*) ;; *) continue ;; esac
  if [ $k = ptx ]; then echo "== PTX (nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), compute_90; $JOBS jobs) =="
  else echo "== HIP gfx906 (hipcc, code object via ${BUNDLER##*/} + ${OBJDUMP##*/}; $JOBS jobs) =="; fi
  join_listings $k "$TMP/$k.tsv"
  check_listing "$TMP/$k.tsv" $k
  if [ $k = hip ]; then
    echo "== HIP gfx906 registers (code-object metadata; loops from the listing) =="
    for f in "$SRC"/*.cu; do b=$(basename "$f" .cu); [ -f "$TMP/hipres.$b.tsv" ] && cat "$TMP/hipres.$b.tsv"; done > "$TMP/hipres.tsv"
    check_res "$TMP/hipres.tsv"
  fi
done

if [ ${#SASS_BINS[@]} -gt 0 ]; then
  if ! command -v cuobjdump >/dev/null; then echo "  FAIL sass: cuobjdump not found"; FAIL=1
  else
    echo "== SASS (cuobjdump --dump-sass ${SASS_BINS[*]}) =="
    : > "$TMP/sass.tsv"
    for bin in "${SASS_BINS[@]}"; do
      cuobjdump --dump-sass "$bin" > "$TMP/sass.txt" 2>&1 || { echo "  FAIL sass: cuobjdump $bin"; FAIL=1; continue; }
      awk '/Function : / { s=$0; sub(/.*Function : /, "", s); cur=s; next }
           cur != "" && /\/\*[0-9a-f]+\*\/[ \t]+/ { s=$0; sub(/.*\/\*[0-9a-f]+\*\/[ \t]+/, "", s); sub(/^@!?U?P[T0-9]+[ \t]+/, "", s); split(s, a, /[ \t;]/); print cur "\t" a[1] }' \
        "$TMP/sass.txt" >> "$TMP/sass.tsv"
    done
    check_listing "$TMP/sass.tsv" sass
  fi
fi

if [ $FAIL = 0 ]; then echo "gpu_gate: PASS"; else echo "gpu_gate: FAIL"; fi
exit $FAIL
