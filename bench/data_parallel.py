#!/usr/bin/env python3
"""Data parallelism on one machine: 2 processes x 1 thread (plain, ZeRO-1
and ZeRO-3) against 1 process x 2 threads, the same global batch, side by
side.

Compiles MODEL four times (global batch G: --batch-size=G for one process,
--batch-size=G/2 --data-parallel, --zero=1 --processes=2 and --zero=3
--processes=2 for two), runs them interleaved, RUNS times each, for STEPS
steps and prints
median ms/step, tokens/s, peak RSS (of the largest process), the ratio,
and, for two processes, the collectives' time in flight and the part of it
hidden behind the backward pass (1 - time waited / time in flight), medians
per step; then the planned optimizer state and peak per process
(`tgc stats`). With --prefetch-depths 0,1,2 it also runs ZeRO-3 with each
fixed `--gather-prefetch` beside the planned one (the default).

  /usr/bin/python3 bench/data_parallel.py [--model M] [--batch G] [--seq S]
      [--prefetch-depths D,...] [--compute-rate GFLOPS]

Quote `lscpu`'s model name with the figures; not a test (times vary).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DONE = re.compile(r"median ([0-9.]+)\), ([0-9]+) tok/s")
PEAK = re.compile(r"peak RSS ([0-9.]+) MiB")
DIST = re.compile(r"collectives in flight ([0-9.]+) ms/step of which ([0-9.]+) waited")


def run(cmd, env):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return out.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tgc", default=os.path.join(ROOT, "build/bin/tgc"))
    ap.add_argument("--model", default=os.path.join(ROOT, "examples/tiny-llama.json"))
    ap.add_argument("--batch", type=int, default=8, help="global batch")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prefetch-depths", default="",
                    help="fixed --gather-prefetch depths to run beside the planned ZeRO-3")
    ap.add_argument("--compute-rate", type=float, default=0,
                    help="ZeRO-3's --compute-rate (GFLOP/s a process; 0: the target's)")
    args = ap.parse_args()
    depths = [int(d) for d in args.prefetch_depths.split(",") if d]
    rate = [f"--compute-rate={args.compute_rate}"] if args.compute_rate else []
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    name = next((l.split(":", 1)[1].strip() for l in cpu.splitlines()
                 if l.startswith("Model name")), "?")
    print(f"CPU: {name}; {os.path.basename(args.model)}, global batch "
          f"{args.batch} x seq {args.seq}, {args.steps} steps, median of {args.runs} runs")
    with tempfile.TemporaryDirectory() as tmp:
        one, two = os.path.join(tmp, "one"), os.path.join(tmp, "two")
        zero = os.path.join(tmp, "zero")
        zero3 = os.path.join(tmp, "zero3")
        common = [args.model, f"--seq-len={args.seq}"]
        half = common + [f"--batch-size={args.batch // 2}"]
        subprocess.run([args.tgc] + common + [f"--batch-size={args.batch}", "-o", one], check=True)
        subprocess.run([args.tgc] + half + ["--data-parallel", "-o", two], check=True)
        subprocess.run([args.tgc] + half + ["--zero=1", "--processes=2", "-o", zero],
                       check=True)
        subprocess.run([args.tgc] + half + ["--zero=3", "--processes=2", "-o", zero3]
                       + rate, check=True)
        fixed = {}
        for depth in depths:
            fixed[depth] = os.path.join(tmp, f"zero3-{depth}")
            subprocess.run([args.tgc] + half + ["--zero=3", "--processes=2",
                                                f"--gather-prefetch={depth}",
                                                "-o", fixed[depth]], check=True)
        env = dict(os.environ)
        steps = ["--steps", str(args.steps)]
        mpirun = ["mpirun", "--allow-run-as-root", "-np", "2", "--bind-to", "core",
                  "-x", "OMP_NUM_THREADS=1"]
        configs = {
            "1 process x 2 threads": [one] + steps + ["--threads", "2"],
            "2 processes x 1 thread": mpirun + [two] + steps + ["--threads", "1"],
            "2 x 1, ZeRO-1": mpirun + [zero] + steps + ["--threads", "1"],
            "2 x 1, ZeRO-3": mpirun + [zero3] + steps + ["--threads", "1"],
        }
        for depth, exe in fixed.items():
            configs[f"2 x 1, ZeRO-3 prefetch {depth}"] = (
                mpirun + [exe] + steps + ["--threads", "1"])
        samples = {label: {"ms": [], "tok": [], "flight": [], "waited": [], "peak": []}
                   for label in configs}
        for _ in range(args.runs):  # interleaved: each run of every config in turn
            for label, cmd in configs.items():
                err = run(cmd, env)
                got = samples[label]
                m = DONE.search(err)
                got["ms"].append(float(m.group(1)))
                got["tok"].append(float(m.group(2)))
                got["peak"].append(float(PEAK.search(err).group(1)))
                d = DIST.search(err)
                if d:
                    got["flight"].append(float(d.group(1)))
                    got["waited"].append(float(d.group(2)))
        results = {}
        for label, got in samples.items():
            med = {k: statistics.median(v) for k, v in got.items() if v}
            results[label] = med["ms"]
            line = (f"{label:24s} {med['ms']:9.2f} ms/step "
                    f"{med['tok']:9.0f} tok/s "
                    f"{med['peak']:8.1f} MiB peak RSS")
            if "flight" in med:
                f, w = med["flight"], med["waited"]
                line += (f"   collectives {f:.2f} ms/step in flight, {w:.2f} waited"
                         f" ({100 * (1 - w / f) if f else 0:.0f}% hidden)")
            print(line)
        a, b, z, z3 = list(results.values())[:4]
        print(f"ratio (2 processes / 1 process, ms/step): {b / a:.2f}; "
              f"ZeRO-1 / plain 2 processes: {z / b:.2f}; ZeRO-3 / ZeRO-1: {z3 / z:.2f}")
        for label, flags in [("plain", ["--data-parallel"]),
                             ("ZeRO-1", ["--zero=1", "--processes=2"]),
                             ("ZeRO-3", ["--zero=3", "--processes=2"] + rate)] + [
                                 (f"ZeRO-3 prefetch {d}",
                                  ["--zero=3", "--processes=2", f"--gather-prefetch={d}"]
                                  + rate) for d in depths]:
            out = subprocess.run([args.tgc, "stats", "--json"] + half + flags,
                                 capture_output=True, text=True, check=True).stdout
            report = json.loads(out)
            memory, comm = report["memory"], report["communication"]
            line = (f"planned per process ({label}): parameters held "
                    f"{memory['parameters_held'] / 2**20:.2f} MiB, optimizer state "
                    f"{memory['optimizer_state'] / 2**20:.2f} MiB, peak of intermediates "
                    f"{memory['peak'] / 2**20:.2f} MiB, total "
                    f"{memory['total'] / 2**20:.2f} MiB")
            if comm.get("prefetch_planned") is not None and label.startswith("ZeRO-3"):
                line += (f"; prefetch depth {comm['prefetch_depth']}, model: "
                         f"{1e3 * comm['gather_exposed_seconds']:.1f} of "
                         f"{1e3 * comm['gather_transfer_seconds']:.1f} ms exposed")
            print(line)


if __name__ == "__main__":
    main()
