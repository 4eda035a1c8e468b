#!/usr/bin/env python3
"""LoRA against full fine-tuning and against a PyTorch eager LoRA, side by
side in one run.

Compiles MODEL twice with tgc, once for full fine-tuning and once with
adapters (--lora-r, --lora-alpha, --lora-targets), runs both executables and
the PyTorch peer (bench/peer_pytorch.py, full and with the same adapters:
PEFT's forward, frozen base) at THREADS threads, alternating rounds, and
prints median ms/step, peak RSS and the ratios. Both sides keep f32 weights.
Not a test: quote the ratios with the CPU model.

  /usr/bin/python3 bench/lora_speed.py [--threads 1] [--steps 5] [--rounds 2]
      [--lora-r 16] [--lora-alpha 32] [--lora-targets q_proj,...] [MODEL]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

ALL_SEVEN = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(compare.ROOT, "build", "bin", "tgc"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--lora-alpha", type=float, default=32)
    ap.add_argument("--lora-targets", default=ALL_SEVEN)
    ap.add_argument("model", nargs="?",
                    default=os.path.join(compare.ROOT, "examples", "llama-d512-l8.json"))
    args = ap.parse_args()
    compare.require_tgc(args.tgc)
    lora_flags = [f"--lora-r={args.lora_r}", f"--lora-alpha={args.lora_alpha}",
                  f"--lora-targets={args.lora_targets}"]
    print(f"CPU: {compare.cpu_model()} ({os.cpu_count()} CPUs), {args.threads} thread(s), "
          f"{os.path.basename(args.model)}, r={args.lora_r} on {args.lora_targets}")
    with tempfile.TemporaryDirectory() as tmp:
        full, lora = os.path.join(tmp, "full"), os.path.join(tmp, "lora")
        compare.compile_model(args.tgc, args.model, full)
        subprocess.run([args.tgc, args.model, "-o", lora] + lora_flags, check=True)
        peer_lora = ["--lora-r", str(args.lora_r), "--lora-alpha", str(args.lora_alpha),
                     "--lora-targets", args.lora_targets]
        runs = {
            "tgc full": lambda: compare.run_tgc(full, args.steps, args.threads),
            "tgc lora": lambda: compare.run_tgc(lora, args.steps, args.threads),
            "torch full": lambda: compare.run_peer(args.model, args.steps, args.threads),
            "torch lora": lambda: compare.run_peer(args.model, args.steps, args.threads,
                                                   extra=peer_lora),
        }
        results = {k: [] for k in runs}
        for _ in range(args.rounds):
            for name, run in runs.items():
                results[name].append(run())
    summary = {k: (statistics.median(r["median_ms"] for r in v),
                   max(r["peak_rss_mib"] for r in v)) for k, v in results.items()}
    for name, (ms, rss) in summary.items():
        print(f"{name:<12}{ms:>10.1f} ms/step{rss:>10.1f} MiB peak RSS")
    print(f"tgc lora / tgc full   = {summary['tgc lora'][0] / summary['tgc full'][0]:.2f}")
    print(f"tgc lora / torch lora = {summary['tgc lora'][0] / summary['torch lora'][0]:.2f}")
    print(f"torch lora / torch full = {summary['torch lora'][0] / summary['torch full'][0]:.2f}")
    print(f"tgc full / torch full = {summary['tgc full'][0] / summary['torch full'][0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
