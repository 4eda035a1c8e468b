#!/usr/bin/env python3
"""Compares two files of space-separated token ids; on a difference prints
where, with the ids around it, and exits 1.

usage: compare_ids.py TGC_IDS ORACLE_IDS
"""
import sys

ours, theirs = (open(path).read().split() for path in sys.argv[1:3])
first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
             None if len(ours) == len(theirs) else min(len(ours), len(theirs)))
if first is None:
    print(f"identical: {len(ours)} ids")
    sys.exit(0)
lo = max(0, first - 5)
print(f"first difference at id {first} of {len(ours)} (tgc) / {len(theirs)} (oracle)")
print("tgc:   ", " ".join(ours[lo:first + 8]))
print("oracle:", " ".join(theirs[lo:first + 8]))
sys.exit(1)
