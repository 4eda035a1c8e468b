"""Writes a copy of a safetensors checkpoint with one tensor multiplied by a
factor (e.g. a classifier head initialised near zero), for --init."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("source")
    p.add_argument("dest")
    p.add_argument("name")
    p.add_argument("factor", type=float)
    args = p.parse_args()
    tensors = safetensors_io.load(args.source)
    if args.name not in tensors:
        raise SystemExit(f"{args.source}: no tensor '{args.name}'")
    tensors = {n: t for n, t in tensors.items() if not n.startswith("optimizer.")}
    tensors[args.name] = tensors[args.name] * args.factor
    safetensors_io.save(args.dest, tensors)


if __name__ == "__main__":
    main()
