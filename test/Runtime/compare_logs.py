#!/usr/bin/env python3
"""Checks that the losses of two --log files agree from step FIRST on
(--close TOL: within a relative tolerance; --falls: that one log's loss falls)."""
import json
import sys


def losses(path):
    out = {}
    for line in open(path):
        row = json.loads(line)
        if "loss" in row:
            out[row["step"]] = row["loss"]
    return out


if sys.argv[1] == "--falls":
    # The mean of the last five losses is below the mean of the first five.
    l = [v for _, v in sorted(losses(sys.argv[2]).items())]
    if len(l) < 10 or sum(l[-5:]) >= sum(l[:5]):
        print(f"loss does not fall: {l[:5]} ... {l[-5:]}")
        sys.exit(1)
    print(f"loss falls: {sum(l[:5]) / 5:.4f} -> {sum(l[-5:]) / 5:.4f}")
    sys.exit(0)

if sys.argv[1] == "--close":
    # Every step both logs have agrees within a relative tolerance.
    tol, a, b = float(sys.argv[2]), losses(sys.argv[3]), losses(sys.argv[4])
    steps = sorted(set(a) & set(b))
    worst = max((abs(a[s] - b[s]) / abs(a[s]) for s in steps), default=None)
    if worst is None or worst > tol:
        print(f"losses differ by {worst} (tolerance {tol}): {[(s, a[s], b[s]) for s in steps]}")
        sys.exit(1)
    print(f"step{'s' if len(steps) > 1 else ''} {steps[0]}"
          f"{'..' + str(steps[-1]) if len(steps) > 1 else ''} within {tol} (worst {worst:.2e})")
    sys.exit(0)

a, b, first = losses(sys.argv[1]), losses(sys.argv[2]), int(sys.argv[3])
steps = sorted(s for s in b if s >= first)
bad = [s for s in steps if a.get(s) != b[s]]
if not steps or bad:
    print(f"mismatch at steps {bad or 'none compared'}: {[(s, a.get(s), b.get(s)) for s in bad]}")
    sys.exit(1)
print(f"steps {steps[0]}..{steps[-1]} identical")
