#!/usr/bin/env python3
"""Loss curves of one model trained in each precision on the same data and
initialisation, drawn as one SVG (no plotting library needed).

  /usr/bin/python3 bench/precision_curves.py [--model examples/tiny-llama.json]
      [--steps 200] [--precision fp32,bf16-mixed,fp16-mixed] [--svg docs/precision-curves.svg]

Prints, for each precision against the first: the final losses, their
relative difference and the mean absolute difference over the curve.
Losses are each step's training batch (sequential order over the default
synthetic corpus), so the curves are noisy the same way.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def cpu_model():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def train(tgc, model, precision, steps, flags, tmp):
    exe = os.path.join(tmp, f"train-{precision}")
    log = os.path.join(tmp, f"{precision}.jsonl")
    subprocess.run([tgc, model, f"--precision={precision}", "-o", exe] + flags, check=True)
    subprocess.run([exe, "--steps", str(steps), "--quiet", "--log", log], check=True)
    with open(log) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r["loss"] for r in rows if "step" in r and "loss" in r]


def svg(curves, title, path):
    w, h, left, right, top, bottom = 720, 420, 60, 20, 40, 50
    steps = max(len(c) for c in curves.values())
    lo = min(min(c) for c in curves.values())
    hi = max(max(c) for c in curves.values())
    pad = (hi - lo) * 0.05 or 1.0
    lo, hi = lo - pad, hi + pad

    def xy(i, v):
        x = left + (w - left - right) * i / max(steps - 1, 1)
        y = top + (h - top - bottom) * (hi - v) / (hi - lo)
        return f"{x:.1f},{y:.1f}"

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
           f'<text x="{w / 2}" y="{h - 12}" text-anchor="middle">step</text>',
           f'<text x="16" y="{h / 2}" transform="rotate(-90 16 {h / 2})" '
           f'text-anchor="middle">training loss</text>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        y = top + (h - top - bottom) * (hi - v) / (hi - lo)
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v:.2f}</text>')
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" '
                   f'stroke="#ddd"/>')
    for k in range(5):
        i = round((steps - 1) * k / 4)
        x = left + (w - left - right) * i / max(steps - 1, 1)
        out.append(f'<text x="{x:.1f}" y="{h - bottom + 16}" text-anchor="middle">{i + 1}</text>')
    for n, (name, c) in enumerate(curves.items()):
        color = COLORS[n % len(COLORS)]
        pts = " ".join(xy(i, v) for i, v in enumerate(c))
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.2" '
                   f'stroke-opacity="0.8" points="{pts}"/>')
        out.append(f'<text x="{w - right - 150}" y="{top + 16 + 16 * n}" fill="{color}">'
                   f'{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tgc", default=os.path.join(ROOT, "build", "bin", "tgc"))
    ap.add_argument("--model", default=os.path.join(ROOT, "examples", "tiny-llama.json"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--precision", default="fp32,bf16-mixed,fp16-mixed")
    ap.add_argument("--svg", default=os.path.join(ROOT, "docs", "precision-curves.svg"))
    ap.add_argument("flags", nargs="*", help="more tgc flags (e.g. --batch-size=4)")
    args = ap.parse_args()
    precisions = args.precision.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        curves = {p: train(args.tgc, args.model, p, args.steps, args.flags, tmp)
                  for p in precisions}
    base = curves[precisions[0]]
    print(f"CPU: {cpu_model()}; {os.path.basename(args.model)}, {args.steps} steps")
    for p in precisions:
        c = curves[p]
        rel = abs(c[-1] - base[-1]) / abs(base[-1])
        mad = sum(abs(a - b) for a, b in zip(c, base)) / len(c)
        # One batch's loss is noisy: also the mean of the last 10 steps.
        tail, base_tail = sum(c[-10:]) / 10, sum(base[-10:]) / 10
        print(f"{p:<12} final loss {c[-1]:.4f}  vs {precisions[0]}: final relative "
              f"difference {rel:.2%}, mean absolute difference {mad:.4f}; "
              f"last 10 steps {tail:.4f} vs {base_tail:.4f} "
              f"({abs(tail - base_tail) / abs(base_tail):.2%})")
    svg(curves, f"{os.path.basename(args.model)}: {args.steps} steps, "
        f"{', '.join(precisions)}", args.svg)
    print(f"wrote {args.svg}")


if __name__ == "__main__":
    sys.exit(main())
