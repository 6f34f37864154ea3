#!/usr/bin/env bash
# session 49 call 2, H200 only: run1 showed the occupancy caps lift the fp8
# M = 1 GEMV on 5120x17408 (70.9 -> 86.8-87.5%) and 6144x5120 (73.9 ->
# 79.0-80.5%) but not 17408x5120 (83.6%). Is there a setting that puts all
# three at >= 85%? The caps 4-7 alone and with the other ring knobs (xpf=1,
# ring=2, wpb=8, r1=1/2), fp8=hf for reference (a second round
# with DV_ROUNDS=2); then a few of
# them with K split over 4 warps instead of 2 (DOTLM_GEMV_FP8KS4N=20000:
# smaller blocks, shorter tails on short-K weights).
. bench/lib/device_prelude.sh
dv_only_on H200
dv_init
# DV_SWEEP_ONLY=1 (a short call, e.g. bench/h200-2026-12-07/run4.sh): the
# first round of the sweep and its table only; no checkpoints, no K split
# over 4 warps, no decode.
[ "${DV_SWEEP_ONLY:-0}" = 1 ] || dv_models fp8-block
# (since the fifty-third session "default" is occ=6 on an H200; occ=0 is the uncapped ring)
V="default;default,occ=0;default,occ=4;default,occ=5;default,occ=6;default,occ=7"
V="$V;default,xpf=1;default,xpf=1,occ=5;default,xpf=1,occ=6;default,xpf=1,occ=7"
V="$V;default,ring=2;default,ring=2,occ=6;default,ring=2,occ=7;default,xpf=0,occ=6"
V="$V;default,wpb=8;default,wpb=8,occ=2;default,wpb=8,occ=3;default,r1=1;default,r1=1,occ=7"
V="$V;default,r1=2;default,r1=2,occ=6;default,r1=2,occ=7;default,fp8=hf;default,fp8=hf,occ=6"
KS4N=20000 # DOTLM_GEMV_FP8KS4N for the ks4 runs: every shape here splits K over 4 warps
V4="default;default,occ=0;default,occ=5;default,occ=6;default,occ=7;default,r1=2;default,r1=2,occ=7;default,xpf=1,occ=6"
gbv() { # gbv NAME VARIANTS [env...]
  local n=$1 v=$2
  shift 2
  env "$@" DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="$v" \
    timeout 200 "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/gbv_$n.log" 2>&1
  echo "$n rc=$? $(grep -m1 'copy D2D' "$L/gbv_$n.log" | tr -s ' ')"
  dv_pack
  dv_t
}
gbv r1 "$V"
[ "${DV_SWEEP_ONLY:-0}" = 1 ] || gbv ks4 "$V4" DOTLM_GEMV_FP8KS4N=$KS4N
[ "${DV_ROUNDS:-1}" -ge 2 ] && { gbv r2 "$V"; gbv ks4b "$V4" DOTLM_GEMV_FP8KS4N=$KS4N; }
echo "== fp8 M=1 early %copy, each run (r1/r2 or ks4/ks4b); (late,graph) of the first"
python3 - "$L" <<'PY'
import sys
sys.path.insert(0, "bench/lib")
from sms_table import parse  # the bench's M = 1 rows, one tuple each
shapes = ["5120x17408", "17408x5120", "6144x5120"]
best = [0.0, "", ""]
for tag, runs in (("", ("r1", "r2")), ("ks4 ", ("ks4", "ks4b"))):
    t = {}
    for r in runs:
        try:
            rows = parse(f"{sys.argv[1]}/gbv_{r}.log")[1]
        except OSError:
            continue
        for fmt, shp, _gbs, _pct, _kgbs, kpct, late, _plain, graph, _kern, var in rows:
            if fmt == "fp8 block":
                t.setdefault(var, {}).setdefault(shp, []).append((kpct, late, graph))
    for v, d in t.items():
        cells = []
        for s in shapes:
            x = d.get(s, [])
            cells.append("/".join(e[0] for e in x) + (f" ({x[0][1]},{x[0][2]})" if x else ""))
        print(f"{tag}{v[8:] or 'default':18s} " + " | ".join(f"{c:24s}" for c in cells))
        worst = min((float(d[s][0][0]) for s in shapes if s in d), default=0.0)
        if len(d) == 3 and (v != "default" or tag) and worst > best[0]:
            best[:] = [worst, v, tag.strip()]
print(f"best by its worst shape: {best}")
open(f"{sys.argv[1]}/best.txt", "w").write(f"{best[1]} {best[2]}\n" if best[1] else "")
PY
# Decode (Qwen3-8B fp8 at 512, two interleaved rounds): the default against
# the variant whose worst shape was best above, with its K split if it had one.
read -r bv bks <"$L/best.txt" || true
if [ -n "${bv:-}" ] && [ "${DV_SWEEP_ONLY:-0}" != 1 ]; then
  dv_models_wait
  echo "decode: default against $bv${bks:+ with DOTLM_GEMV_FP8KS4N=$KS4N}"
  for _ in 1 2; do
    dv_decode fp8-block
    # (DOTLM_GEMV_FP8KS4N=0, the engine's default, splits nothing over 4 warps)
    DOTLM_GEMV=$bv DOTLM_GEMV_FP8KS4N=$([ "${bks:-}" = ks4 ] && echo "$KS4N" || echo 0) dv_decode fp8-block
  done
  dv_t
fi
dv_finish
