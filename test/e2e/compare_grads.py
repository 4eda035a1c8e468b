"""Compares two --dump-grads files tensor by tensor: prints the worst
norm-wise relative error ||a - b|| / ||b|| and PASS or FAIL against --tol.

With --floor F (the same oracle run with `tgc-ref --store-f32`), the
tolerance is the larger of --tol and --floor-factor times F's own worst
error against `expected`: how far two evaluations that round at the same
bf16/f16 points drift apart when they differ only by f32 rounding, which
no f32 implementation can beat."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io as st  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("actual")
    p.add_argument("expected")
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--floor", help="the oracle run with --store-f32")
    p.add_argument("--floor-factor", type=float, default=2.0)
    args = p.parse_args()
    b = st.load(args.expected)
    tol = args.tol
    if args.floor:
        floor = worst_error(st.load(args.floor), b, args.floor)
        if floor is None:
            return 1
        print(f"floor (oracle storing f32 vs oracle): {floor[0]:.3g} "
              f"({floor[1]})")
        tol = max(tol, args.floor_factor * floor[0])
    worst = worst_error(st.load(args.actual), b, args.actual)
    if worst is None:
        return 1
    print(f"{len(b)} tensors, worst relative error {worst[0]:.3g} "
          f"({worst[1]})")
    print("PASS" if worst[0] <= tol else f"FAIL (tolerance {tol:g})")
    return 0 if worst[0] <= tol else 1


def worst_error(a, b, what):
    """The worst norm-wise relative error of a's tensors against b's and
    its tensor's name, or None (after saying why) if they do not match."""
    if sorted(a) != sorted(b):
        print(f"FAIL: {what}: different tensors:", sorted(set(a) ^ set(b)))
        return None
    worst, worst_name = -1.0, ""
    for name in sorted(b):
        x = np.asarray(a[name], dtype=np.float64)
        y = np.asarray(b[name], dtype=np.float64)
        if x.shape != y.shape:
            print(f"FAIL: {what}: {name}: shape {x.shape} vs {y.shape}")
            return None
        err = np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-30)
        if not np.isfinite(err) or err > worst:
            worst, worst_name = err, name
    return worst, worst_name


if __name__ == "__main__":
    sys.exit(main())
