#!/usr/bin/env python3
"""Writes a damaged copy of a safetensors file for the runtime's error tests:
drop a tensor, reshape it, add an extra one, change its dtype, or make its
header lie about its size. Uses only the standard library."""
import json
import struct
import sys

src, dst, action, name = sys.argv[1:5]
data = open(src, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
body = data[8 + n:]
if action == "drop":
    del header[name]
elif action == "reshape":
    size = 1
    for d in header[name]["shape"]:
        size *= d
    header[name]["shape"] = [2, size // 2]
elif action == "add":
    end = len(body)
    body += b"\0" * 16
    header[name] = {"dtype": "F32", "shape": [4], "data_offsets": [end, end + 16]}
elif action == "int":
    header[name]["dtype"] = "I32"
elif action == "lie":
    b, e = header[name]["data_offsets"]
    header[name]["shape"] = [header[name]["shape"][0] * 2]
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
open(dst, "wb").write(struct.pack("<Q", len(h)) + h + body)
