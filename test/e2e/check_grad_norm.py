"""Checks the executable's reported gradient norm (first line of a --log
file) against the norm of the gradients it dumped, computed in f64."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io as st  # noqa: E402

log, grads, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
reported = json.loads(open(log).readline())["grad_norm"]
tensors = st.load(grads)
exact = np.sqrt(sum((np.asarray(v, dtype=np.float64) ** 2).sum()
                    for k, v in tensors.items() if k != "loss"))
error = abs(reported - exact) / exact
print(f"grad_norm {reported:.6f}, exact {exact:.6f}, relative error {error:.2e}")
print("PASS" if error <= tol else f"FAIL (tolerance {tol:g})")
