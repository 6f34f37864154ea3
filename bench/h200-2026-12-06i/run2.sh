#!/usr/bin/env bash
# session 49 call 2, H200 only: run1 showed the occupancy caps lift the fp8
# M = 1 GEMV on 5120x17408 (70.9 -> 86.8-87.5%) and 6144x5120 (73.9 ->
# 79.0-80.5%) but not 17408x5120 (83.6%). Is there a setting that puts all
# three at >= 85%? The caps 4-7 alone and with the other ring knobs (xpf=1,
# ring=2, wpb=8, r1=2), fp8=hf for reference; two rounds.
. bench/lib/device_prelude.sh
dv_only_on H200
dv_init
V="default;default,occ=4;default,occ=5;default,occ=6;default,occ=7"
V="$V;default,xpf=1;default,xpf=1,occ=5;default,xpf=1,occ=6;default,xpf=1,occ=7"
V="$V;default,ring=2;default,ring=2,occ=6;default,ring=2,occ=7;default,xpf=0,occ=6"
V="$V;default,wpb=8;default,wpb=8,occ=2;default,wpb=8,occ=3"
V="$V;default,r1=2;default,r1=2,occ=6;default,r1=2,occ=7;default,fp8=hf;default,fp8=hf,occ=6"
for r in 1 2; do
  DOTLM_BENCH_TWIN=1 DOTLM_GEMV_MS=1 DOTLM_GEMV_VARIANTS="$V" \
    timeout 250 "$B/dotlm_gpu_bench" --no-sweep --quick >"$L/gbv$r.log" 2>&1
  echo "round $r rc=$? $(grep -m1 'copy D2D' "$L/gbv$r.log" | tr -s ' ')"
  dv_t
done
echo "== fp8 M=1 early %copy (round 1 / round 2), late and graph of round 1"
python3 - "$L" <<'PY'
import re, sys
R = re.compile(r"^fp8 block\s+(\d+x\d+)\s+1\s+\S+\s+\S+\s+\S+\s+([\d.]+)%\s+([\d.]+)%\s+\S+\s+([\d.]+)%\s+\S+\s+(\S+)")
t = {}
for r in (1, 2):
    for line in open(f"{sys.argv[1]}/gbv{r}.log", errors="replace"):
        m = R.match(line)
        if m:
            t.setdefault(m.group(5), {}).setdefault(m.group(1), []).append((m.group(2), m.group(3), m.group(4)))
shapes = ["5120x17408", "17408x5120", "6144x5120"]
for v, d in t.items():
    cells = []
    for s in shapes:
        x = d.get(s, [])
        cells.append("/".join(e[0] for e in x) + (f" ({x[0][1]},{x[0][2]})" if x else ""))
    print(f"{v[8:] or 'default':18s} " + " | ".join(f"{c:24s}" for c in cells))
PY
dv_finish
