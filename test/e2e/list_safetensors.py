#!/usr/bin/env python3
"""Prints 'name [shape]' for every tensor of a safetensors file, sorted."""
import json
import struct
import sys

data = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
for name in sorted(k for k in header if k != "__metadata__"):
    print(f"{name} {header[name]['shape']}")
