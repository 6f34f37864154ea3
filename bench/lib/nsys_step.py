#!/usr/bin/env python3
"""Where a decode step's time goes, from an Nsight Systems GPU trace.

Input: the CSV of `nsys stats --report cuda_gpu_trace --format csv` for a
`dotlm bench` run traced with `--cuda-graph-trace=node` (so the kernels of
a replayed decode graph appear one by one). Steps are cut at each
device-to-host copy (a decode step ends with its logits row's copy).

For the steps in the middle of the run (the first --skip and the last two
left out) it prints, per kernel name and grid x (which tells the GEMV
launches apart), the launches per step, the mean
duration, and the mean "end delta": how far the kernel moved the step's
latest end (end - max(earlier ends), 0 when it ended under an earlier
kernel). End deltas add up to the step's time from its first start, so
they are each kernel's share of the critical path, PDL overlap included;
a duration includes a kernel's time waiting on its PDL predecessor.

  nsys profile -t cuda --cuda-graph-trace=node -o /tmp/p dotlm bench ...
  nsys stats -r cuda_gpu_trace -f csv -o /tmp/p /tmp/p.nsys-rep
  python3 bench/lib/nsys_step.py /tmp/p_cuda_gpu_trace.csv
"""
import argparse
import csv
import re
import statistics
import sys


def col(header, *keys):
    """Index of the first header cell starting with one of keys."""
    for k in keys:
        for i, h in enumerate(header):
            if h.strip().lower().startswith(k.lower()):
                return i
    raise SystemExit(f"nsys_step: no column {keys} in {header}")


def short(name):
    """Kernel name without its template arguments and parameters."""
    n = re.sub(r"^void ", "", name.strip())
    n = n.split("(")[0]
    n = n.split("<")[0]
    return n[:48]


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    hi = next((i for i, r in enumerate(rows) if r and r[0].startswith("Start")), None)
    if hi is None:
        raise SystemExit(f"nsys_step: {path} has no 'Start' header row")
    h = rows[hi]
    cs, cd, cn = col(h, "Start"), col(h, "Duration"), col(h, "Name")
    cg = col(h, "GrdX")
    out = []
    for r in rows[hi + 1:]:
        if len(r) <= max(cs, cd, cn):
            continue
        try:
            s, d = float(r[cs]), float(r[cd])
        except ValueError:
            continue
        out.append((s, s + d, r[cn], r[cg] if cg < len(r) else ""))
    out.sort()
    return out


def walk(step):
    """A step's launches in start order, each with its end delta (how far it
    moved the step's latest end) and its start relative to the step's."""
    t0 = latest = step[0][0]
    for s, e, n, g in step:
        yield s - t0, e - s, max(0.0, e - latest), n, g
        latest = max(latest, e)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--skip", type=int, default=4, help="steps left out at the start (eager, capture)")
    ap.add_argument("--show", type=int, default=None, help="also list one step's launches (its index)")
    a = ap.parse_args()
    rows = read_rows(a.csv)
    steps, cur = [], []
    for r in rows:
        cur.append(r)
        if "Device-to-Host" in r[2] or "DtoH" in r[2]:
            steps.append(cur)
            cur = []
    mid = steps[a.skip:-2]
    if not mid:
        raise SystemExit(f"nsys_step: {len(steps)} steps found, none left after --skip {a.skip}")
    per = {}  # name -> [launches, sum dur, sum end delta]
    totals = []
    for st in mid:
        end = 0.0
        for s, d, x, n, g in walk(st):
            k = f"{short(n)[:40]} g{g}"
            if "memcpy" in n.lower() or "memset" in n.lower():
                k = n.strip()[:48]
            v = per.setdefault(k, [0, 0.0, 0.0])
            v[0] += 1
            v[1] += d
            v[2] += x
            end += x
        totals.append(end)
    ns = len(mid)
    print(f"steps {ns} (of {len(steps)}), step from first start to last end: "
          f"median {statistics.median(totals) / 1e3:.1f} us")
    gaps = [mid[i + 1][0][0] - max(r[1] for r in mid[i]) for i in range(ns - 1)]
    if gaps:
        print(f"between steps (last end to next first start): median {statistics.median(gaps) / 1e3:.1f} us")
    print(f"{'kernel, grid x':48} {'per step':>8} {'mean us':>8} {'crit us/step':>12}")
    for k, (c, d, x) in sorted(per.items(), key=lambda kv: -kv[1][2]):
        print(f"{k:48} {c / ns:8.1f} {d / c / 1e3:8.2f} {x / ns / 1e3:12.1f}")
    if a.show is not None:
        if not -len(steps) <= a.show < len(steps):
            raise SystemExit(f"nsys_step: --show {a.show}: the trace has {len(steps)} steps")
        print(f"step {a.show}: start us, duration us, end delta us, grid x, kernel")
        for s, d, x, n, g in list(walk(steps[a.show]))[:60]:
            print(f"{s / 1e3:9.2f} {d / 1e3:8.2f} {x / 1e3:8.2f} {g:>6} {short(n)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
