"""Compares two --dump-grads files tensor by tensor: prints the worst
norm-wise relative error ||a - b|| / ||b|| and PASS or FAIL against --tol."""
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
    args = p.parse_args()
    a, b = st.load(args.actual), st.load(args.expected)
    if sorted(a) != sorted(b):
        print("FAIL: different tensors:", sorted(set(a) ^ set(b)))
        return 1
    worst, worst_name = -1.0, ""
    for name in sorted(b):
        x = np.asarray(a[name], dtype=np.float64)
        y = np.asarray(b[name], dtype=np.float64)
        if x.shape != y.shape:
            print(f"FAIL: {name}: shape {x.shape} vs {y.shape}")
            return 1
        err = np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-30)
        if not np.isfinite(err) or err > worst:
            worst, worst_name = err, name
    print(f"{len(b)} tensors, worst relative error {worst:.3g} ({worst_name})")
    print("PASS" if worst <= args.tol else f"FAIL (tolerance {args.tol:g})")
    return 0 if worst <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
