"""Compares the losses and gradient norms of two --log files step by step:
prints the worst relative difference and PASS or FAIL against --rtol."""
import argparse
import json


def rows(path):
    with open(path) as f:
        return [r for r in map(json.loads, f) if "loss" in r]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("expected")
    p.add_argument("actual")
    p.add_argument("--rtol", type=float, required=True)
    args = p.parse_args()
    a, b = rows(args.expected), rows(args.actual)
    if len(a) != len(b) or not a:
        print(f"FAIL: {len(a)} and {len(b)} steps")
        return 1
    worst, where = 0.0, ""
    for x, y in zip(a, b):
        for key in ("loss", "grad_norm"):
            d = abs(x[key] - y[key]) / max(abs(x[key]), 1e-30)
            if d >= worst:
                worst, where = d, f"{key} at step {x['step']}"
    verdict = "PASS" if worst <= args.rtol else f"FAIL (rtol {args.rtol:g})"
    print(f"{len(a)} steps, worst relative difference {worst:.2e} ({where}): {verdict}")
    return 0 if worst <= args.rtol else 1


if __name__ == "__main__":
    raise SystemExit(main())
