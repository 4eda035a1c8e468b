#!/usr/bin/env python3
"""Decode speed of a tgc generation executable against PyTorch eager with a
KV cache (bench/peer_decode.py), batch 1, random weights, 1 and 2 threads,
interleaved, and against the machine's memory bandwidth (bench/triad.c):
the bytes one decode step reads (the f32 weights and the caches' filled
rows) per second, as a fraction of the triad's GB/s.

usage: bench/decode_speed.py [--model examples/tinyllama-1.1b.json]
           [--prompt 64] [--new 32] [--cache 256] [--rounds 2]
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
args = ap.parse_args()

work = pathlib.Path(tempfile.mkdtemp(prefix="tgc-decode-"))
triad = work / "triad"
subprocess.run(["clang-22", "-O3", "-march=native", "-fopenmp", str(root / "bench" / "triad.c"),
                "-o", str(triad)], check=True)
exe = work / "generate"
subprocess.run([args.tgc, args.model, "--program=generate", f"--seq-len={args.cache}",
                f"--prefill-tokens={args.prompt}", "-o", str(exe)], check=True)
config = json.load(open(args.model))
prompt = " ".join(str((7 * i + 3) % config["vocab_size"]) for i in range(args.prompt))

def env(threads):
    e = {k: v for k, v in os.environ.items()
         if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    e.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    return e

def run_tgc(threads):
    out = subprocess.run([str(exe), "--prompt-ids", prompt, "--max-new-tokens", str(args.new),
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

# Bytes a decode step reads: every f32 weight once, and the caches' rows.
d, layers = config["hidden_size"], config["num_hidden_layers"]
heads = config["num_attention_heads"]
kv = config.get("num_key_value_heads") or heads
hd = config.get("head_dim") or d // heads
ff, vocab = config["intermediate_size"], config["vocab_size"]
weights = 4 * (vocab * d * (1 if config.get("tie_word_embeddings") else 2)
               + layers * (d * d * 2 + 2 * d * kv * hd + 3 * d * ff + 2 * d) + d)
cache = 4 * layers * 2 * kv * hd * args.cache  # every query reads the whole cache
lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
cpu = re.search(r"Model name:\s*(.*)", lscpu).group(1)
print(f"CPU: {cpu}")
print(f"weights {weights / 1e9:.2f} GB f32, cache read per token {cache / 1e6:.1f} MB")
print("| threads | triad GB/s | tgc tok/s | tgc GB/s (share) | PyTorch tok/s | ratio | tgc prefill ms | PyTorch prefill ms |")
print("|---|---|---|---|---|---|---|---|")
for threads in (1, 2):
    bw = float(subprocess.run([str(triad)], capture_output=True, text=True,
                              env=env(threads), check=True).stdout)
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(run_tgc(threads))
        theirs.append(run_peer(threads))
    tok = statistics.median(t for _, t in ours)
    peer = statistics.median(t for _, t in theirs)
    pre = statistics.median(p for p, _ in ours)
    ppre = statistics.median(p for p, _ in theirs)
    gbs = tok * (weights + cache) / 1e9
    print(f"| {threads} | {bw:.1f} | {tok:.2f} | {gbs:.1f} ({gbs / bw:.0%}) | {peer:.2f} | "
          f"{tok / peer:.2f}x | {pre:.0f} | {ppre:.0f} |")
