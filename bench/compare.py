#!/usr/bin/env python3
"""tgc executables against PyTorch eager, side by side in one run.

For each model file: compiles it with tgc, runs the executable and the
PyTorch peer (bench/peer_pytorch.py) with 1 and 2 threads, and prints the
median ms/step, peak RSS and the ratios. Not a test: numbers vary with the
machine; quote the ratios.

  /usr/bin/python3 bench/compare.py [--tgc build/bin/tgc] [--steps N] [MODEL...]
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


def run_tgc(exe, steps, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "log.jsonl")
        out = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb=%M", exe, "--steps",
                              str(steps + 3), "--quiet", "--log", log],
                             capture_output=True, text=True, env=env, check=True)
        rows = [json.loads(l) for l in open(log) if '"ms"' in l]
    times = [r["ms"] for r in rows[3:]]  # the first three steps warm up
    rss = int(re.search(r"maxrss_kb=(\d+)", out.stderr).group(1)) / 1024
    return {"median_ms": statistics.median(times), "peak_rss_mib": rss}


def run_peer(model, steps, threads):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    # OpenBLAS keeps its own thread pool besides torch's intra-op threads.
    env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "peer_pytorch.py"),
                          "--model", model, "--threads", str(threads), "--steps", str(steps)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "build", "bin", "tgc"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("models", nargs="*",
                    default=[os.path.join(ROOT, "examples", "mlp.json"),
                             os.path.join(ROOT, "examples", "tiny-llama.json")])
    args = ap.parse_args()
    print(f"{'model':<16}{'thr':>4}{'tgc ms':>10}{'torch ms':>10}{'ratio':>8}"
          f"{'tgc RSS':>10}{'torch RSS':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            name = os.path.splitext(os.path.basename(model))[0]
            exe = os.path.join(tmp, name)
            subprocess.run([args.tgc, model, "-o", exe], check=True)
            for threads in (1, 2):
                ours = run_tgc(exe, args.steps, threads)
                peer = run_peer(model, args.steps, threads)
                ratio = ours["median_ms"] / peer["median_ms"]
                print(f"{name:<16}{threads:>4}{ours['median_ms']:>10.2f}{peer['median_ms']:>10.2f}"
                      f"{ratio:>8.2f}{ours['peak_rss_mib']:>9.1f}M{peer['peak_rss_mib']:>10.1f}M",
                      flush=True)
    print("ratio = tgc / torch median ms per step (lower is better); RSS = peak resident set."
          " tgc runs its matmuls on --threads / OMP_NUM_THREADS threads.")


if __name__ == "__main__":
    sys.exit(main())
