#!/usr/bin/env python3
"""Loops in one kernel's SASS listing (`cuobjdump -sass -fun NAME BIN`):
every backward branch gives one line, its address range, instruction count
and opcode histogram (predicates and modifiers stripped), e.g. the K loop of
a GEMV. Usage: sass_loops.py LISTING"""
import collections
import re
import sys

ins = []
for line in open(sys.argv[1]):
    m = re.search(r"/\*([0-9a-f]{4})\*/\s+(.*?);", line)
    if m:
        ins.append((int(m.group(1), 16), m.group(2).strip()))
for a, t in ins:
    m = re.search(r"BRA.*?(0x[0-9a-f]+)", t)
    if not m or int(m.group(1), 16) >= a:
        continue
    tgt = int(m.group(1), 16)
    body = [x for x in ins if tgt <= x[0] <= a]
    ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", x[1]).split()[0].split(".")[0] for x in body)
    print(f"loop {tgt:#x}-{a:#x}: {len(body)} instr", dict(ops.most_common(14)))
