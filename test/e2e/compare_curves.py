"""Compares the loss curves of two training logs (--log JSONL): prints the
final losses, their relative difference and the mean absolute difference
over the curve; PASS when the final losses differ by at most --final-rtol."""
import argparse
import json
import sys


def losses(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r["loss"] for r in rows if "loss" in r and "step" in r]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("actual")
    p.add_argument("expected")
    p.add_argument("--final-rtol", type=float, default=0.02)
    args = p.parse_args()
    a, b = losses(args.actual), losses(args.expected)
    if not a or len(a) != len(b):
        print(f"FAIL: {len(a)} and {len(b)} logged steps")
        return 1
    rel = abs(a[-1] - b[-1]) / abs(b[-1])
    mad = sum(abs(x - y) for x, y in zip(a, b)) / len(a)
    print(f"{len(a)} steps: first {a[0]:.4f} / {b[0]:.4f}, final {a[-1]:.4f} / {b[-1]:.4f}, "
          f"final relative difference {rel:.3e}, mean absolute difference {mad:.3e}")
    ok = rel <= args.final_rtol
    print("PASS" if ok else f"FAIL (tolerance {args.final_rtol:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
