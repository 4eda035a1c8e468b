#!/usr/bin/env python3
"""Sweeps --memory-budget finely and checks the budget policy's promises:
the planned peak fits the budget, never rises as the budget falls, and the
extra FLOPs never exceed those of --remat=layers at a budget that layers
fits.  Usage: check_monotone.py TGC MODEL [STEPS]"""
import json
import subprocess
import sys

tgc, model = sys.argv[1], sys.argv[2]
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 40


def stats(*flags):
    out = subprocess.run([tgc, "stats", model, "--json", *flags],
                         capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


base = stats()
layers = stats("--remat=layers")
peak0 = base["memory"]["peak"]
last_peak, feasible, problems = None, 0, []
for i in range(steps + 1):
    budget = int(peak0 * (1.0 - 0.9 * i / steps))
    s = stats(f"--memory-budget={budget}")
    if s is None:
        continue
    feasible += 1
    peak, flops = s["memory"]["peak"], s["flops"]["recompute"]
    if peak > budget:
        problems.append(f"budget {budget}: peak {peak} does not fit")
    if last_peak is not None and peak > last_peak:
        problems.append(f"budget {budget}: peak {peak} rose above {last_peak}")
    if layers and budget >= layers["memory"]["peak"] and flops > layers["flops"]["recompute"]:
        problems.append(f"budget {budget}: {flops} extra FLOPs > layers' {layers['flops']['recompute']}")
    last_peak = peak
print("\n".join(problems) or f"ok: {feasible} feasible budgets, monotone, within layers' FLOPs")
sys.exit(1 if problems or feasible < 2 else 0)
