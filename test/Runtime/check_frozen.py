#!/usr/bin/env python3
"""Checks a checkpoint written after training with `tgc --freeze=REGEX`
against the one training started from: every parameter whose whole name
matches REGEX (re.fullmatch) is bit-identical and has no optimizer state;
every other parameter changed and has its state. Prints 'N frozen
identical, M trainable changed' or what is wrong; exits 1 then. Uses only
the standard library."""
import argparse
import json
import re
import struct


def read(path):
    """name -> (dtype, shape, raw bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    header.pop("__metadata__", None)
    return {name: (h["dtype"], h["shape"], body[h["data_offsets"][0]:h["data_offsets"][1]])
            for name, h in header.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("initial")
    p.add_argument("trained")
    p.add_argument("--freeze", required=True)
    args = p.parse_args()
    before, after = read(args.initial), read(args.trained)
    params = sorted(n for n in before if not n.startswith("optimizer."))
    problems = []
    frozen = changed = 0
    for name in params:
        if name not in after:
            problems.append(f"{name}: missing from {args.trained}")
            continue
        states = [s for s in after if s.startswith("optimizer.") and s.endswith("." + name)]
        if re.fullmatch(args.freeze, name):
            frozen += 1
            if after[name] != before[name]:
                problems.append(f"{name}: frozen but changed")
            if states:
                problems.append(f"{name}: frozen but has optimizer state {states}")
        else:
            changed += 1
            if after[name][2] == before[name][2]:
                problems.append(f"{name}: trainable but unchanged")
            if not states:
                problems.append(f"{name}: trainable but has no optimizer state")
    for line in problems:
        print("FAIL " + line)
    print(f"{frozen} frozen identical, {changed} trainable changed")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
