"""Prints, for the gradients a --dump-grads file holds, the fraction of
entries that are exactly zero (all tensors together, and the worst tensor):
fp16 gradients that underflow come out as zeros."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("grads")
    args = p.parse_args()
    tensors = safetensors_io.load(args.grads)
    zeros = total = 0
    worst, worst_name = 0.0, ""
    for name, t in tensors.items():
        if name == "loss":
            continue
        values = t.reshape(-1)
        z, n = int((values == 0).sum()), values.numel()
        zeros += z
        total += n
        if z / n >= worst:
            worst, worst_name = z / n, name
    print(f"zero gradient entries: {100.0 * zeros / total:.1f}% of {total} "
          f"(worst tensor {worst_name}: {100.0 * worst:.1f}%)")


if __name__ == "__main__":
    main()
