#!/usr/bin/env python3
"""M = 1 GEMV figures of dotlm_gpu_bench runs made with DOTLM_GPU_SMS, as
shares of the whole device's copy bandwidth.

usage: sms_table.py LOGDIR

Reads LOGDIR/gb_all.log (every SM) and LOGDIR/gb_<N>.log (N SMs, a green
context). Each run's percentages are of the copy bandwidth it measured
itself; this table divides every GEMV's bytes per second by gb_all's copy
bandwidth instead, so a run on N SMs of an H100 reads as a device with
that many bytes per second per SM (96 SMs of an H100 ~ an H200). Columns:
the early-trigger chain (the bench's "kern" column, what decode runs),
the late-trigger chain, plain launches, the graph.
"""
import os
import re
import sys

ROW = re.compile(r"^(bf16|fp8 block|int8 W8A8)\s+(\d+x\d+)\s+1\s+([\d.]+)\s+([\d.]+)%\s+([\d.]+)\s+([\d.]+)%\s+"
                 r"([\d.]+)%\s+([\d.]+)%\s+([\d.]+)%\s+(\S+)\s+(\S+)")
COPY = re.compile(r"^copy D2D \(read\+write\)\s+([\d.]+) GB/s")


def parse(path):
    copy, rows = None, []
    with open(path, errors="replace") as f:
        for line in f:
            m = COPY.match(line)
            if m and copy is None:
                copy = float(m.group(1))
            m = ROW.match(line)
            if m:
                rows.append(m.groups())
    return copy, rows


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    runs = {}
    for name in os.listdir(d):
        m = re.fullmatch(r"gb_(all|\d+)\.log", name)
        if m:
            runs[m.group(1)] = parse(os.path.join(d, name))
    if "all" not in runs or runs["all"][0] is None:
        sys.exit("sms_table: no gb_all.log with a copy bandwidth in " + d)
    full = runs["all"][0]
    keys = ["all"] + sorted((k for k in runs if k != "all"), key=lambda k: -int(k))
    print(f"M = 1 GEMV, % of the whole device's copy bandwidth ({full:.1f} GB/s): early / late / plain / graph")
    print("%-10s %-11s %-16s" % ("format", "n x k", "variant") + "".join("%-26s" % f"SMs={k}" for k in keys))
    table = {}
    order = []
    for k in keys:
        copy, rows = runs[k]
        for fmt, shp, _gbs, _p, kgbs, _kp, late, plain, graph, _kern, var in rows:
            key = (fmt, shp, var)
            if key not in table:
                table[key] = {}
                order.append(key)
            c = copy or full
            vals = [float(kgbs)] + [float(x) * c / 100.0 for x in (late, plain, graph)]
            table[key][k] = "/".join("%.1f" % (100.0 * v / full) for v in vals)
    for key in order:
        fmt, shp, var = key
        if fmt == "bf16" and var != "default":
            continue  # the variants are fp8 / int8 knobs
        if (fmt == "fp8 block" and "i8xp" in var) or (fmt == "int8 W8A8" and "hf" in var):
            continue
        print("%-10s %-11s %-16s" % (fmt, shp, var) + "".join("%-26s" % table[key].get(k, "-") for k in keys))


if __name__ == "__main__":
    main()
