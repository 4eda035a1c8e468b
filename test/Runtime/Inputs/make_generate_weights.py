#!/usr/bin/env python3
"""Writes weights for the toy generation program (generate-toy.c), whose
logits after a token are the row of w [V, V] of that token:

  counting.safetensors   (bf16) the most likely id after r is r + 1, except
                         after 100: 40 and 50 tie (greedy takes 40); after
                         10: 198 (<0xC3>), after 198: 172 (<0xA9>), after 172
                         and after 269: 2 (the spiece tokenizer's EOS)
  flat.safetensors       w = 0: every id equally likely
  missing.safetensors    no 'w'
  misshaped.safetensors  w [V, V - 1]
  extra.safetensors      w and a tensor the model does not have

usage: make_generate_weights.py OUTPUT_DIR V
"""
import json
import os
import struct
import sys

out, V = sys.argv[1], int(sys.argv[2])
os.makedirs(out, exist_ok=True)


def write(name, tensors):
    header, data = {}, b""
    for key, (dtype, shape, payload) in tensors.items():
        header[key] = {"dtype": dtype, "shape": shape,
                       "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(out, name), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def bf16(values):  # exact for the small integers used here
    return b"".join(struct.pack("<f", v)[2:] for v in values)


w = [0.0] * (V * V)
for r in range(V):
    w[r * V + (r + 1) % V] = 1.0
w[100 * V + 101] = 0.0
w[100 * V + 40] = w[100 * V + 50] = 2.0
for row, best in [(10, 198), (198, 172), (172, 2), (269, 2)]:
    if row < V and best < V:
        w[row * V + (row + 1) % V] = 0.0
        w[row * V + best] = 1.0
write("counting.safetensors", {"w": ("BF16", [V, V], bf16(w))})
write("flat.safetensors", {"w": ("F32", [V, V], f32([0.0] * (V * V)))})
write("missing.safetensors", {"v": ("F32", [2, 2], f32([0.0] * 4))})
write("misshaped.safetensors",
      {"w": ("F32", [V, V - 1], f32([0.0] * (V * (V - 1))))})
write("extra.safetensors", {"w": ("F32", [V, V], f32([0.0] * (V * V))),
                            "bias": ("F32", [V], f32([0.0] * V))})
