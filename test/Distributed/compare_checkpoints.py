"""Compares the f32 tensors of two safetensors checkpoints name by name:
prints the worst difference relative to each tensor's largest magnitude,
and PASS or FAIL against --rtol (FAIL also when the names or shapes
differ)."""
import argparse
import array
import json
import struct


def read(path):
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        values = array.array("f")
        values.frombytes(data[begin:end])
        tensors[name] = (entry["shape"], values)
    return tensors


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("expected")
    p.add_argument("actual")
    p.add_argument("--rtol", type=float, required=True)
    args = p.parse_args()
    a, b = read(args.expected), read(args.actual)
    if sorted(a) != sorted(b) or not a:
        print(f"FAIL: tensors differ: {sorted(set(a) ^ set(b))[:5]}")
        return 1
    worst, where = 0.0, ""
    for name, (shape, x) in a.items():
        if b[name][0] != shape:
            print(f"FAIL: '{name}' has shape {b[name][0]}, expected {shape}")
            return 1
        y = b[name][1]
        scale = max(max((abs(v) for v in x), default=0.0), 1e-30)
        d = max((abs(u - v) for u, v in zip(x, y)), default=0.0) / scale
        if d >= worst:
            worst, where = d, name
    ok = worst <= args.rtol
    verdict = "PASS" if ok else f"FAIL (rtol {args.rtol:g})"
    print(f"{len(a)} tensors, worst relative difference {worst:.2e} ({where}): {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
