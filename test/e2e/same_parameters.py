"""Compares the parameters (not the optimizer state) of two checkpoints bit
for bit and prints the metadata of the second: 'N parameters identical'
or the first that differs."""
import argparse
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("expected")
    p.add_argument("actual")
    args = p.parse_args()
    a, b = safetensors_io.load(args.expected), safetensors_io.load(args.actual)
    names = sorted(n for n in a if not n.startswith("optimizer."))
    for n in names:
        if n not in b or not bool((a[n] == b[n]).all()):
            print(f"parameter {n} differs")
            return 1
    print(f"{len(names)} parameters identical")
    with open(args.actual, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        metadata = json.loads(f.read(size)).get("__metadata__", {})
    for key in sorted(metadata):
        print(f"metadata {key} = {metadata[key]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
