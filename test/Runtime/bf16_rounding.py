#!/usr/bin/env python3
"""Checks that every BF16 tensor of a checkpoint is the round-to-nearest-even
bf16 of the f32 tensor of the same name in another; prints 'N bf16 tensors
are the rounded f32 ones, M kept f32' or what differs (exit 1). Standard
library only."""
import json
import struct
import sys


def read(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    return {k: (h["dtype"], body[h["data_offsets"][0]:h["data_offsets"][1]])
            for k, h in header.items() if not k.startswith("optimizer.")}


def bf16(f32_bytes):
    out = bytearray()
    for (bits,) in struct.iter_unpack("<I", f32_bytes):
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        out += struct.pack("<H", rounded & 0xFFFF)
    return bytes(out)


wide, narrow = read(sys.argv[1]), read(sys.argv[2])
rounded = kept = 0
for name, (dtype, raw) in sorted(narrow.items()):
    if dtype == "BF16":
        if wide[name][0] != "F32" or bf16(wide[name][1]) != raw:
            sys.exit(f"{name}: not the bf16 rounding of the f32 tensor")
        rounded += 1
    elif dtype == "F32":
        if raw != wide[name][1]:
            sys.exit(f"{name}: an f32 tensor that differs")
        kept += 1
print(f"{rounded} bf16 tensors are the rounded f32 ones, {kept} kept f32")
