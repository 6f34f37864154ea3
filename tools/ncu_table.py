#!/usr/bin/env python3
"""Sum Nsight Compute's per-launch device time (ncu --csv --metrics
gpu__time_duration.sum) by kernel name: calls, total us, mean us, share.
Usage: tools/ncu_table.py ncu.csv"""
import csv
import sys


def main():
    rows = []
    with open(sys.argv[1], errors="replace") as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "ns")
        us = v / 1000.0 if unit in ("nsecond", "ns") else (v * 1000.0 if unit in ("msecond", "ms") else v)
        name = r["Kernel Name"].split("(")[0].split("<")[0]
        rows.append((name, us))
    if not rows:
        print("ncu_table: no gpu__time_duration rows")
        return
    tot = sum(u for _, u in rows)
    agg = {}
    for n, u in rows:
        c, t = agg.get(n, (0, 0.0))
        agg[n] = (c + 1, t + u)
    print(f"{len(rows)} launches, {tot:.1f} us of device time")
    print(f"{'kernel':40s} {'calls':>6s} {'total us':>10s} {'mean us':>9s} {'share':>6s}")
    for n, (c, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        print(f"{n:40s} {c:6d} {t:10.1f} {t / c:9.2f} {100 * t / tot:5.1f}%")


if __name__ == "__main__":
    main()
