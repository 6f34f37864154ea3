#!/usr/bin/env python3
"""Summarise GPU clock / power samples per phase of a device call.

  smi_phases.py SAMPLES.csv MARKS.txt

SAMPLES.csv: `nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,
clocks_event_reasons.active --format=csv,noheader,nounits -lms 50` (the
timestamp as nvidia-smi prints it, local time). MARKS.txt: lines
`NAME start|end YYYY/MM/DD HH:MM:SS.ffffff` (`date '+%Y/%m/%d %H:%M:%S.%6N'`).
Prints, per phase: the samples in it, SM clock min / median / max (MHz),
memory clock median, power median / max (W), and the clock event reasons
seen (hex masks: 0x4 SW power cap, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW
power brake; 0x1 idle)."""
import sys
from datetime import datetime
from statistics import median

FMT = "%Y/%m/%d %H:%M:%S.%f"


def when(s):
    s = s.strip()
    if "." in s:  # %f takes at most 6 digits
        a, b = s.split(".", 1)
        s = a + "." + b[:6]
    return datetime.strptime(s, FMT)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    samples = []
    for line in open(argv[1]):
        f = [x.strip() for x in line.split(",")]
        if len(f) < 5:
            continue
        try:
            samples.append((when(f[0]), float(f[1]), float(f[2]), float(f[3]), f[4]))
        except ValueError:
            continue  # a header or an error line
    starts, phases = {}, []
    for line in open(argv[2]):
        p = line.split(None, 2)
        if len(p) != 3:
            continue
        name, kind, t = p
        if kind == "start":
            starts[name] = when(t)
        elif kind == "end" and name in starts:
            phases.append((name, starts.pop(name), when(t)))
    print(f"{'phase':<22} {'n':>4} {'SM min':>7} {'SM med':>7} {'SM max':>7} {'mem':>6} {'W med':>6} {'W max':>6}  reasons")
    for name, t0, t1 in phases:
        s = [x for x in samples if t0 <= x[0] <= t1]
        if not s:
            print(f"{name:<22} {0:>4}  (no samples)")
            continue
        sm = [x[1] for x in s]
        pw = [x[3] for x in s]
        reasons = sorted(set(x[4] for x in s))
        print(f"{name:<22} {len(s):>4} {min(sm):>7.0f} {median(sm):>7.0f} {max(sm):>7.0f} "
              f"{median(x[2] for x in s):>6.0f} {median(pw):>6.0f} {max(pw):>6.0f}  {' '.join(reasons)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
