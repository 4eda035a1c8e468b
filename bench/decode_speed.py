#!/usr/bin/env python3
"""Decode speed of a tgc generation executable against PyTorch eager with a
KV cache (bench/peer_decode.py), batch 1, random weights, 1 and 2 threads,
interleaved, and against the machine's memory bandwidth (bench/triad.c):
the bytes one decode step reads (the weights, the embedding row and the
caches) per second, as a fraction of the triad's GB/s. The same program
compiled with --precision=bf16-mixed (the products' weights in bf16) runs
beside the f32 one. The bytes a step reads come from `tgc stats
--program=generate`.

usage: bench/decode_speed.py [--model examples/tinyllama-1.1b.json]
           [--prompt 64] [--new 32] [--cache 256] [--rounds 2] [--mcpu CPU]
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parent.parent
ap = argparse.ArgumentParser()
ap.add_argument("--model", default=str(root / "examples" / "tinyllama-1.1b.json"))
ap.add_argument("--tgc", default=str(root / "build" / "bin" / "tgc"))
ap.add_argument("--prompt", type=int, default=64)
ap.add_argument("--new", type=int, default=32)
ap.add_argument("--cache", type=int, default=256)
ap.add_argument("--rounds", type=int, default=2)
ap.add_argument("--mcpu", default="native",
                help="tgc's --mcpu (x86-64-v3: AVX2 code, as on a CPU without AVX-512)")
args = ap.parse_args()

work = pathlib.Path(tempfile.mkdtemp(prefix="tgc-decode-"))
triad = work / "triad"
subprocess.run(["clang-22", "-O3", "-march=native", "-fopenmp", str(root / "bench" / "triad.c"),
                "-o", str(triad)], check=True)
exes = {}
for precision in ("fp32", "bf16-mixed"):
    exes[precision] = work / f"generate-{precision}"
    subprocess.run([args.tgc, args.model, "--program=generate", f"--seq-len={args.cache}",
                    f"--prefill-tokens={args.prompt}", f"--precision={precision}",
                    f"--mcpu={args.mcpu}", "-o", str(exes[precision])], check=True)
config = json.load(open(args.model))
prompt = " ".join(str((7 * i + 3) % config["vocab_size"]) for i in range(args.prompt))

def env(threads):
    e = {k: v for k, v in os.environ.items()
         if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    e.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    return e

def run_tgc(threads, precision):
    out = subprocess.run([str(exes[precision]), "--prompt-ids", prompt, "--max-new-tokens", str(args.new),
                          "--temperature", "0", "--print-ids", "--threads", str(threads)],
                         capture_output=True, text=True, check=True, env=env(threads))
    m = re.search(r"prefill ([\d.]+) ms; \d+ new tokens, decode ([\d.]+) tokens/s", out.stderr)
    return float(m.group(1)), float(m.group(2))

def run_peer(threads):
    out = subprocess.run(["/usr/bin/python3", str(root / "bench" / "peer_decode.py"),
                          "--model", args.model, "--threads", str(threads),
                          "--prompt-tokens", str(args.prompt), "--new-tokens", str(args.new),
                          "--cache", str(args.cache)],
                         capture_output=True, text=True, check=True, env=env(threads))
    r = json.loads(out.stdout)
    return r["prefill_ms"], r["decode_tokens_per_s"]

# Bytes a decode step reads, from `tgc stats --program=generate`: each
# weight once (the products' in bf16 in the bf16-mixed program), one row of
# an embedding table no product reads, and the whole caches.
read, cache = {}, 0
for precision in exes:
    stats = json.loads(subprocess.run(
        [args.tgc, "stats", args.model, "--program=generate", f"--seq-len={args.cache}",
         f"--prefill-tokens={args.prompt}", f"--precision={precision}", "--json"],
        capture_output=True, text=True, check=True).stdout)
    read[precision] = stats["decode"]["weight_bytes_read"]
    cache = stats["decode"]["cache_bytes_read"]
lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
cpu = re.search(r"Model name:\s*(.*)", lscpu).group(1)
print(f"CPU: {cpu}; tgc --mcpu={args.mcpu}")
print(f"weights read per token: {read['fp32'] / 1e9:.2f} GB f32, "
      f"{read['bf16-mixed'] / 1e9:.2f} GB bf16-mixed; cache {cache / 1e6:.1f} MB")
print("| threads | triad GB/s | tgc f32 tok/s | GB/s (share) | tgc bf16 tok/s | GB/s (share) "
      "| bf16/f32 | PyTorch f32 tok/s | tgc f32/PyTorch | prefill ms: tgc f32 | tgc bf16 "
      "| PyTorch f32 |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for threads in (1, 2):
    bw = float(subprocess.run([str(triad)], capture_output=True, text=True,
                              env=env(threads), check=True).stdout)
    ours = {p: [] for p in exes}
    theirs = []
    for _ in range(args.rounds):
        for p in exes:
            ours[p].append(run_tgc(threads, p))
        theirs.append(run_peer(threads))
    tok = {p: statistics.median(t for _, t in r) for p, r in ours.items()}
    pre = {p: statistics.median(t for t, _ in r) for p, r in ours.items()}
    peer = statistics.median(t for _, t in theirs)
    ppre = statistics.median(p for p, _ in theirs)
    gbs = {p: tok[p] * (read[p] + cache) / 1e9 for p in exes}
    f32, bf16 = "fp32", "bf16-mixed"
    print(f"| {threads} | {bw:.1f} | {tok[f32]:.2f} | {gbs[f32]:.1f} ({gbs[f32] / bw:.0%}) "
          f"| {tok[bf16]:.2f} | {gbs[bf16]:.1f} ({gbs[bf16] / bw:.0%}) "
          f"| {tok[bf16] / tok[f32]:.2f}x | {peer:.2f} | {tok[f32] / peer:.2f}x "
          f"| {pre[f32]:.0f} | {pre[bf16]:.0f} | {ppre:.0f} |")
