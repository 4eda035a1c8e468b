#!/usr/bin/env python3
"""Rematerialisation: memory saved against FLOPs added, per policy.

Part 1 (plans, from `tgc stats --json`, no compilation): for each model, the
saved activations, planned peak and extra FLOPs of none / selective / layers
and of budgets from 90% down to 30% of the peak without remat.

Part 2 (executables, --run): compiles the first model with each policy, runs
a few steps and reports median ms/step, peak RSS and the planned arena; RSS
minus weights, gradients and optimizer state is compared with the arena.

Not a test: the plans are exact, the times vary with the machine.

  /usr/bin/python3 bench/remat.py [--tgc build/bin/tgc] [--run] [MODEL...]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MIB = 1024.0 * 1024.0


def stats(tgc, model, flags):
    out = subprocess.run([tgc, "stats", model, "--json"] + flags,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout)


def step_flops(s):
    f = s["flops"]
    return f["forward"] + f["backward"] + f["optimizer"]


def plans(tgc, model):
    base = stats(tgc, model, [])
    print(f"\n{os.path.basename(model)}: saved activations {base['memory']['saved_activations'] / MIB:.1f} MiB, "
          f"planned peak {base['memory']['peak'] / MIB:.1f} MiB without remat")
    print(f"  {'plan':<14}{'saved MiB':>11}{'cut':>8}{'peak MiB':>10}{'extra FLOPs':>13}")
    rows = [("none", []), ("selective", ["--remat=selective"]), ("layers", ["--remat=layers"])]
    rows += [(f"budget {p}%", [f"--memory-budget={p}%"]) for p in range(90, 20, -10)]
    last_peak = None
    for name, flags in rows:
        s = stats(tgc, model, flags)
        if s is None:
            print(f"  {name:<14}{'no plan fits':>24}")
            continue
        saved = s["memory"]["saved_activations"]
        cut = 1 - saved / base["memory"]["saved_activations"]
        extra = s["flops"]["recompute"] / step_flops(base)
        print(f"  {name:<14}{saved / MIB:>11.1f}{cut:>8.0%}{s['memory']['peak'] / MIB:>10.1f}{extra:>13.1%}")
        if name.startswith("budget"):
            if last_peak is not None and s["memory"]["peak"] > last_peak:
                print("  !! planned peak rose as the budget fell")
            last_peak = s["memory"]["peak"]


def run(tgc, model, steps):
    base = stats(tgc, model, [])
    fixed = (base["memory"]["parameters"] * 2 + base["memory"]["optimizer_state"]) / MIB
    print(f"\n{os.path.basename(model)} executables ({steps} steps; weights + gradients + "
          f"optimizer state = {fixed:.1f} MiB)")
    print(f"  {'plan':<14}{'ms/step':>9}{'RSS MiB':>9}{'arena MiB':>11}{'RSS-fixed':>11}{'ratio':>7}"
          f"{'step adds':>11}{'ratio':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in [("none", []), ("selective", ["--remat=selective"]),
                            ("budget 60%", ["--memory-budget=60%"]), ("layers", ["--remat=layers"])]:
            exe = os.path.join(tmp, "train")
            subprocess.run([tgc, model, "-o", exe] + flags, check=True)
            log = os.path.join(tmp, "log.jsonl")
            out = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb=%M", exe, "--steps",
                                  str(steps + 2), "--log", log],
                                 capture_output=True, text=True, check=True,
                                 env=dict(os.environ, OMP_NUM_THREADS="1"))
            times = [json.loads(l)["ms"] for l in open(log) if '"ms"' in l][2:]
            rss = int(re.search(r"maxrss_kb=(\d+)", out.stderr).group(1)) / 1024
            before = float(re.search(r"\(([0-9.]+) MiB before the first step", out.stderr).group(1))
            arena = float(re.search(r"planned arena ([0-9.]+) MiB", out.stderr).group(1))
            # RSS-fixed: minus weights, gradients and state; step adds: what
            # the steps add to the process (program and data excluded too).
            print(f"  {name:<14}{statistics.median(times):>9.1f}{rss:>9.1f}{arena:>11.1f}"
                  f"{rss - fixed:>11.1f}{(rss - fixed) / arena:>7.2f}"
                  f"{rss - before:>11.1f}{(rss - before) / arena:>7.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "build", "bin", "tgc"))
    ap.add_argument("--run", action="store_true", help="also compile and run the first model")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("models", nargs="*",
                    default=[os.path.join(ROOT, "examples", "tiny-llama.json"),
                             os.path.join(ROOT, "examples", "llama-d512-l8.json")])
    args = ap.parse_args()
    for model in args.models:
        plans(args.tgc, model)
    if args.run:
        run(args.tgc, args.models[0], args.steps)


if __name__ == "__main__":
    sys.exit(main())
