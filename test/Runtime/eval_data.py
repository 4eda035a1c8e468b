#!/usr/bin/env python3
"""Inputs and checks of eval-data.test (./train --eval-data FILE).

  texts SRC DIR      DIR/x.txt: 300 bytes of SRC; DIR/p.txt: 2700 other
                     bytes; DIR/px.txt: p then x, so that the held-out last
                     10% of px.txt is exactly x.txt
  csv DIR            the same for the MLP: p.csv 90 rows, x.csv 10, px.csv
  u16 CACHE OUT      a --tokenizer cache (16-byte header, uint32 ids) as a
                     .bin of uint16 ids
  same A B           two --log files hold the same records (every step's
                     loss and grad_norm, every eval_loss), none missing
  differ A B         the two logs' eval losses all differ
"""
import glob
import json
import random
import struct
import sys


def records(path):
    out = []
    for line in open(path):
        row = json.loads(line)
        out.append({k: v for k, v in row.items()
                    if k in ("step", "loss", "grad_norm", "eval_loss")})
    return out


def evals(path):
    return [r["eval_loss"] for r in records(path) if "eval_loss" in r]


command = sys.argv[1]
if command == "texts":
    text = open(sys.argv[2], "rb").read()
    x, p = text[:300], text[5000:7700]
    assert len(p) == 9 * len(x)
    for name, data in ("x", x), ("p", p), ("px", p + x):
        open(f"{sys.argv[3]}/{name}.txt", "wb").write(data)
elif command == "csv":
    r = random.Random(1)
    rows = [",".join([str(r.randrange(10))] +
                     ["%.3f" % r.gauss(0, 1) for _ in range(784)])
            for _ in range(100)]
    for name, part in ("p", rows[:90]), ("x", rows[90:]), ("px", rows):
        open(f"{sys.argv[2]}/{name}.csv", "w").write("\n".join(part) + "\n")
elif command == "u16":
    [cache] = glob.glob(sys.argv[2])
    data = open(cache, "rb").read()[16:]
    ids = struct.unpack(f"<{len(data) // 4}I", data)
    open(sys.argv[3], "wb").write(struct.pack(f"<{len(ids)}H", *ids))
elif command == "same":
    a, b = records(sys.argv[2]), records(sys.argv[3])
    n = len([r for r in a if "eval_loss" in r])
    if a != b or not n:
        print(f"logs differ:\n{a}\n{b}")
        sys.exit(1)
    print(f"{len(a)} records identical, {n} eval losses")
elif command == "differ":
    a, b = evals(sys.argv[2]), evals(sys.argv[3])
    if not a or len(a) != len(b) or any(x == y for x, y in zip(a, b)):
        print(f"eval losses not all different: {a} {b}")
        sys.exit(1)
    print(f"{len(a)} eval losses differ")
else:
    sys.exit(f"unknown command {command}")
