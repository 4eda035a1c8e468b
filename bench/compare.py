#!/usr/bin/env python3
"""tgc executables against PyTorch eager, side by side in one run.

For each model file: compiles it with tgc, runs the executable and the
PyTorch peer (bench/peer_pytorch.py) with 1 and 2 threads, and prints the
median ms/step, peak RSS and the ratios. Not a test: numbers vary with the
machine; quote the ratios.

  /usr/bin/python3 bench/compare.py [--tgc build/bin/tgc] [--steps N]
      [--rounds R] [--fusion default,none] [--precision fp32,bf16-mixed]
      [MODEL...]

With --rounds R each executable runs R times per thread count, 1 and 2
threads alternating, and the table shows the median over the rounds' medians:
on a shared virtual machine the speed drifts over minutes, and alternating
keeps a drift from landing on one thread count only (the same for the
peer). With several --fusion modes each model is compiled once per mode (rows
"name[mode]") against the same PyTorch runs. Each --precision is compiled
with tgc's --precision and compared with PyTorch in the same precision
(bf16-mixed: the forward pass under torch.autocast, CPU, bfloat16).
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


def run_peer(model, steps, threads, precision="fp32", extra=()):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    # OpenBLAS keeps its own thread pool besides torch's intra-op threads.
    env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "peer_pytorch.py"),
                          "--model", model, "--threads", str(threads), "--steps", str(steps),
                          "--precision", precision] + list(extra),
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def alternating(run, rounds):
    """run(threads) for 1 and 2 threads, `rounds` times each, alternating;
    per thread count the median of the runs' medians and the largest RSS."""
    runs = {1: [], 2: []}
    for _ in range(max(1, rounds)):
        for threads in (1, 2):
            runs[threads].append(run(threads))
    return {t: {"median_ms": statistics.median(r["median_ms"] for r in rs),
                "peak_rss_mib": max(r["peak_rss_mib"] for r in rs)}
            for t, rs in runs.items()}


def cpu_model():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def require_tgc(tgc):
    """Exits with a message when `tgc` is not an executable (not built yet)."""
    if not os.access(tgc, os.X_OK):
        sys.exit(f"{os.path.basename(sys.argv[0])}: --tgc {tgc}: no such executable "
                 "(build first: cmake --build build)")


def mcpu_flags(mcpu):
    """tgc's flags for code for `mcpu`: none for "host" (this CPU)."""
    return [] if mcpu == "host" else [f"--mcpu={mcpu}"]


def compile_model(tgc, model, exe, fusion="default", precision="fp32", mcpu="host"):
    """Compiles `model` to `exe`; returns tgc's wall time (s) and peak memory (MiB)."""
    cmd = [tgc, model, f"--fusion={fusion}", f"--precision={precision}", "-o", exe] + \
        mcpu_flags(mcpu)
    out = subprocess.run(["/usr/bin/time", "-f", "wall_s=%e maxrss_kb=%M"] + cmd,
                         capture_output=True, text=True)
    if out.returncode != 0:
        why = "\n".join(l for l in out.stderr.splitlines()
                        if not l.startswith(("wall_s=", "Command exited", "Command terminated")))
        sys.exit(f"{os.path.basename(sys.argv[0])}: {' '.join(cmd)} failed "
                 f"(exit status {out.returncode}):\n{why or '(no message)'}")
    wall = float(re.search(r"wall_s=([\d.]+)", out.stderr).group(1))
    rss = int(re.search(r"maxrss_kb=(\d+)", out.stderr).group(1)) / 1024
    return wall, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "build", "bin", "tgc"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1,
                    help="runs per thread count, 1 and 2 threads alternating (median of medians)")
    ap.add_argument("--fusion", default="default",
                    help="comma-separated tgc --fusion modes to compile each model with")
    ap.add_argument("--precision", default="fp32",
                    help="comma-separated precisions (fp32, bf16-mixed): tgc --precision, "
                         "PyTorch autocast for bf16-mixed")
    ap.add_argument("--mcpu", default="host",
                    help="the CPU tgc compiles for (tgc --mcpu; host: this one)")
    ap.add_argument("models", nargs="*",
                    default=[os.path.join(ROOT, "examples", "mlp.json"),
                             os.path.join(ROOT, "examples", "tiny-llama.json")])
    args = ap.parse_args()
    require_tgc(args.tgc)
    print(f"CPU: {cpu_model()} ({os.cpu_count()} CPUs)"
          + (f", code for --mcpu={args.mcpu}" if args.mcpu != "host" else ""))
    print(f"{'model':<32}{'thr':>4}{'tgc ms':>10}{'torch ms':>10}{'ratio':>8}{'vs best':>9}"
          f"{'tgc x':>7}{'tgc RSS':>10}{'torch RSS':>11}{'compile':>10}{'tgc-mem':>9}")
    modes = args.fusion.split(",")
    precisions = args.precision.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(m, p) for m in args.models for p in precisions]
        for model, precision in runs:
            name = os.path.splitext(os.path.basename(model))[0]
            peers = alternating(lambda t: run_peer(model, args.steps, t, precision),
                                args.rounds)
            best_peer = min(p["median_ms"] for p in peers.values())
            for mode in modes:
                tags = ([mode] if len(modes) > 1 else []) + \
                       ([precision] if len(precisions) > 1 else [])
                label = name + (f"[{','.join(tags)}]" if tags else "")
                exe = os.path.join(tmp, f"{name}-{mode}-{precision}")
                wall, crss = compile_model(args.tgc, model, exe, mode, precision, args.mcpu)
                ours = alternating(lambda t: run_tgc(exe, args.steps, t), args.rounds)
                rows = [(t, ours[t], peers[t]) for t in (1, 2)]
                one = rows[0][1]["median_ms"]
                for threads, ours, peer in rows:
                    ratio = ours["median_ms"] / peer["median_ms"]
                    vs_best = ours["median_ms"] / best_peer
                    print(f"{label:<32}{threads:>4}{ours['median_ms']:>10.2f}"
                          f"{peer['median_ms']:>10.2f}{ratio:>8.2f}{vs_best:>9.2f}"
                          f"{one / ours['median_ms']:>7.2f}"
                          f"{ours['peak_rss_mib']:>9.1f}M{peer['peak_rss_mib']:>10.1f}M"
                          f"{wall:>9.1f}s{crss:>8.0f}M", flush=True)
    print("ratio = tgc / torch median ms per step at the same thread count; vs best = tgc / "
          "torch's best time at <= 2 threads; tgc x = tgc's speed-up over its 1-thread time; "
          "RSS = peak resident set; compile = tgc's wall time and peak memory for -o.")


if __name__ == "__main__":
    sys.exit(main())
