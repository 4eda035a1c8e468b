#!/usr/bin/env python3
"""bf16-mixed (or fp16-mixed) against fp32, the same tgc, in interleaved rounds.

The mixed-precision targets are ratios of tgc's own step times: on a CPU
with AVX512-BF16 bf16-mixed <= 0.7x fp32, on one without <= 1.0x. On a
shared virtual machine the speed drifts by 20% within minutes, more than
the differences in question, so each round runs fp32 and then the mixed
step back to back and the ratio is taken per round; the table gives the
median of the rounds' ratios, their range and the fastest steps.

--mcpu compiles for another CPU than the host: `--mcpu=x86-64-v4` on a CPU
with AVX512-BF16 runs the code a CPU without it gets (products widened to
f32, conversions in integer arithmetic), a proxy for such a CPU (its
memory system stays the host's).

  /usr/bin/python3 bench/precision_speed.py [--tgc build/bin/tgc]
      [--mcpu host,x86-64-v4] [--precision bf16-mixed] [--rounds 6]
      [--steps 20] [--threads 1,2] [MODEL...]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ROOT, compile_model, cpu_model, mcpu_flags, require_tgc, run_tgc  # noqa: E402

def host_has_bf16():
    with open("/proc/cpuinfo") as f:
        return "avx512_bf16" in f.read()


def targets_bf16(tgc, mcpu):
    """Whether code for `mcpu` has bf16 dot products (AVX512-BF16 vdpbf16ps
    or AMX tdpbf16ps in the small MLP's bf16-mixed step)."""
    cmd = [tgc, os.path.join(ROOT, "examples", "mlp.json"), "--precision=bf16-mixed",
           "--emit=asm", "-o", "-"] + mcpu_flags(mcpu)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"precision_speed: {' '.join(cmd)} failed:\n{out.stderr}")
    return "dpbf16ps" in out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tgc", default=os.path.join(ROOT, "build", "bin", "tgc"))
    ap.add_argument("--mcpu", default="host,x86-64-v4",
                    help="comma-separated CPUs to compile for (host: no --mcpu)")
    ap.add_argument("--precision", default="bf16-mixed",
                    help="the mixed precision compared with fp32")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("models", nargs="*",
                    default=[os.path.join(ROOT, "examples", "tiny-llama.json")])
    args = ap.parse_args()
    if args.rounds < 1 or args.steps < 1:
        sys.exit("precision_speed: --rounds and --steps must be at least 1")
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        sys.exit(f"precision_speed: --threads: expected numbers such as 1,2, got '{args.threads}'")
    if any(t < 1 for t in threads):
        sys.exit("precision_speed: --threads must be at least 1")
    require_tgc(args.tgc)
    host_bf16 = host_has_bf16()
    print(f"CPU: {cpu_model()} ({os.cpu_count()} CPUs), "
          f"{'with' if host_bf16 else 'without'} AVX512-BF16")
    print(f"{'model':<20}{'mcpu':<14}{'bf16 dot':>9}{'thr':>4}{'fp32 ms':>10}"
          f"{args.precision + ' ms':>17}{'ratio':>7}{'range':>13}{'fastest':>17}")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            name = os.path.splitext(os.path.basename(model))[0]
            for mcpu in args.mcpu.split(","):
                has_bf16 = targets_bf16(args.tgc, mcpu)
                exes = {}
                for precision in ("fp32", args.precision):
                    exes[precision] = os.path.join(tmp, f"{name}-{mcpu}-{precision}")
                    compile_model(args.tgc, model, exes[precision], precision=precision, mcpu=mcpu)
                for t in threads:
                    base, mixed = [], []
                    for _ in range(args.rounds):
                        base.append(run_tgc(exes["fp32"], args.steps, t)["median_ms"])
                        mixed.append(run_tgc(exes[args.precision], args.steps, t)["median_ms"])
                    ratios = [m / b for m, b in zip(mixed, base)]
                    print(f"{name:<20}{mcpu:<14}{'yes' if has_bf16 else 'no':>9}{t:>4}"
                          f"{statistics.median(base):>10.1f}{statistics.median(mixed):>17.1f}"
                          f"{statistics.median(ratios):>7.3f}"
                          f"{min(ratios):>7.2f}-{max(ratios):<5.2f}"
                          f"{min(base):>8.1f}/{min(mixed):<8.1f}", flush=True)
    print(f"ratio = median over {args.rounds} rounds of ({args.precision} / fp32) median ms "
          "per step, each round running both back to back; range = the rounds' ratios; "
          "fastest = each step's fastest round median; bf16 dot = whether the code has "
          "bf16 dot-product instructions (--mcpu x86-64-v4 on a host with them: the proxy for a "
          "CPU without).")


if __name__ == "__main__":
    sys.exit(main())
