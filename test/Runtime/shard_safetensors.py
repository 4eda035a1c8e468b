#!/usr/bin/env python3
"""Splits a safetensors file into N shards the way Hugging Face stores big
checkpoints: DIR/model-0000i-of-0000N.safetensors plus
DIR/model.safetensors.index.json (metadata.total_size and a weight_map from
tensor name to shard file). Optimizer state ("optimizer.*") is left out.
Uses only the standard library."""
import json
import os
import struct
import sys

src, out_dir, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
body = data[8 + n:]
names = sorted(k for k in header
               if k != "__metadata__" and not k.startswith("optimizer."))
os.makedirs(out_dir, exist_ok=True)
weight_map, total = {}, 0
for i in range(count):
    shard = f"model-{i + 1:05d}-of-{count:05d}.safetensors"
    part, blobs, offset = {}, [], 0
    for name in names[i::count]:
        info = header[name]
        begin, end = info["data_offsets"]
        blob = body[begin:end]
        part[name] = {"dtype": info["dtype"], "shape": info["shape"],
                      "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
        weight_map[name] = shard
        total += len(blob)
    h = json.dumps(part).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(out_dir, shard), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f,
              indent=2)
