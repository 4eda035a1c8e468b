#!/usr/bin/env python3
"""A real fine-tune: LoRA against full fine-tuning of the tiny llama, what
each learns of a new text and what each forgets of the old one, drawn as
one SVG (no plotting library needed).

  /usr/bin/python3 bench/lora_finetune.py [--pretrain-steps 600] [--steps 200]
      [--every 20] [--lr-full 1e-4] [--lr-lora 1e-3] [--threads 1]
      [--svg docs/lora-finetune.svg] [--workdir DIR] [--pretrained CKPT]

1. Pre-trains examples/tiny-llama.json (bytes as tokens) on text A, the
   first 90% of /usr/share/common-licenses/GPL-3, with its last 10% held out
   (A-heldout, never trained on), at the model file's lr.
2. Fine-tunes that checkpoint on text B, the first 90% of Apache-2.0 (its
   last 10% held out as B-heldout), once with LoRA (r 16, alpha 32, every
   projection of attention and MLP) and once in full, the same steps,
   batches (--data-order random, one seed) and a constant lr each.
3. Every --every steps, evaluates each fine-tune's weights on B-heldout
   and A-heldout: a run of the executable that loads them (--init, and
   --init-adapter for LoRA) and takes one step at lr 1e-30 with
   --eval-every 1 --eval-data FILE. The executable evaluates only after a
   step, so the step must change nothing: each evaluation run saves its
   weights and the script checks they are bit for bit those it loaded.
   The fine-tunes run in segments of --every steps, each --resume-ing the
   last (resume is bit-exact: the losses of an uninterrupted run), so each
   segment's end leaves a checkpoint; their own --eval-every on B-heldout
   must agree with the evaluation runs.

Prints a table of the held-out losses and redraws docs/lora-finetune.svg.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import cpu_model  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LICENSES = "/usr/share/common-licenses"
TARGETS = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
COLORS = {"LoRA": "#1f77b4", "full": "#d62728"}
NOOP_LR = "1e-30"  # an AdamW update of ~1e-30 leaves every f32 weight as it is


def split(src, train, heldout):
    """The first 90% of src's bytes to train, the last 10% to heldout (the
    cut the executable's own --eval-every would make)."""
    with open(src, "rb") as f:
        data = f.read()
    cut = len(data) * 9 // 10
    for path, part in ((train, data[:cut]), (heldout, data[cut:])):
        with open(path, "wb") as f:
            f.write(part)
    return len(data), cut


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    return r.stderr


def read_log(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    train = [r for r in rows if "loss" in r]
    evals = {r["step"]: r["eval_loss"] for r in rows if "eval_loss" in r}
    return train, evals


def tensors(path):
    """A safetensors file's tensors as raw bytes by name (no numpy)."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    return {k: blob[base + v["data_offsets"][0]:base + v["data_offsets"][1]]
            for k, v in header.items() if k != "__metadata__"}


def weights_of(path):
    """The parameters a checkpoint holds: a full checkpoint's non-optimizer
    tensors, or an adapter directory's adapters."""
    if os.path.isdir(path):
        return tensors(os.path.join(path, "adapter_model.safetensors"))
    return {k: v for k, v in tensors(path).items() if not k.startswith("optimizer.")}


class Evaluator:
    def __init__(self, base_exe, lora_exe, pretrained, data, threads, tmp):
        self.base_exe, self.lora_exe = base_exe, lora_exe
        self.pretrained, self.data, self.threads, self.tmp = pretrained, data, threads, tmp
        self.runs = 0

    def __call__(self, eval_file, full=None, adapter=None):
        """The held-out loss on eval_file of a full checkpoint (full), of the
        pretrained model with an adapter directory (adapter), or of the
        pretrained model (neither)."""
        log = os.path.join(self.tmp, "eval.jsonl")
        out = os.path.join(self.tmp, "eval-out")
        if adapter:
            cmd = [self.lora_exe, "--init", self.pretrained, "--init-adapter", adapter]
        else:
            cmd = [self.base_exe, "--init", full or self.pretrained]
        cmd += ["--data", self.data, "--eval-data", eval_file, "--eval-every", "1",
                "--steps", "1", "--lr", NOOP_LR, "--threads", str(self.threads),
                "--log", log, "--save", out, "--quiet"]
        run(cmd)
        _, evals = read_log(log)
        # The one step must have left the weights evaluated as they were.
        before = weights_of(adapter or full or self.pretrained)
        after = weights_of(out)
        if before.keys() != after.keys() or any(before[k] != after[k] for k in before):
            changed = [k for k in before if before[k] != after.get(k)]
            sys.exit(f"evaluation changed weights: {changed[:5]}")
        if os.path.isdir(out):
            shutil.rmtree(out)
        else:
            os.remove(out)
        self.runs += 1
        return evals[1]


def fine_tune(kind, exe, pretrained, b_train, b_heldout, lr, steps, every, seed,
              threads, tmp):
    """Fine-tunes in segments of `every` steps, each resuming the last;
    returns {step: checkpoint}, the in-run held-out B losses and the train
    losses."""
    ckpts, in_run, train = {}, {}, []
    prev = None
    for end in range(every, steps + 1, every):
        save = os.path.join(tmp, f"{kind}-{end}" + ("" if kind == "LoRA" else ".safetensors"))
        log = os.path.join(tmp, f"{kind}-{end}.jsonl")
        cmd = [exe, "--data", b_train, "--eval-data", b_heldout, "--eval-every", str(every),
               "--data-order", "random", "--seed", str(seed), "--lr", repr(lr),
               "--steps", str(every), "--threads", str(threads), "--save", save,
               "--log", log, "--quiet"]
        if kind == "LoRA":
            # The base is always --init; the adapters and their state resume.
            cmd += ["--init", pretrained] + (["--resume", prev] if prev else [])
        else:
            cmd += ["--resume", prev] if prev else ["--init", pretrained]
        run(cmd)
        rows, evals = read_log(log)
        train += rows
        in_run.update(evals)
        ckpts[end] = save
        prev = save
    return ckpts, in_run, train


def time_step(exe, data, threads, tmp, steps=3):
    log = os.path.join(tmp, "timing.jsonl")
    run([exe, "--data", data, "--steps", str(steps), "--threads", str(threads),
         "--log", log, "--quiet"])
    rows, _ = read_log(log)
    ms = sorted(r["ms"] for r in rows)
    return ms[len(ms) // 2] / 1000.0


def svg(panels, steps, title, path):
    """panels: [(title, {name: [(step, loss)]}, baseline label)] side by side."""
    pw, h, left, right, top, bottom = 440, 420, 60, 20, 56, 50
    w = pw * len(panels)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for p, (ptitle, curves) in enumerate(panels):
        x0 = p * pw
        lo = min(v for c in curves.values() for _, v in c)
        hi = max(v for c in curves.values() for _, v in c)
        pad = (hi - lo) * 0.08 or 0.1
        lo, hi = lo - pad, hi + pad

        def X(s):
            return x0 + left + (pw - left - right) * s / steps

        def Y(v):
            return top + (h - top - bottom) * (hi - v) / (hi - lo)

        out += [f'<text x="{x0 + pw / 2}" y="42" text-anchor="middle" font-size="13">'
                f'{ptitle}</text>',
                f'<line x1="{X(0):.1f}" y1="{h - bottom}" x2="{X(steps):.1f}" '
                f'y2="{h - bottom}" stroke="black"/>',
                f'<line x1="{X(0):.1f}" y1="{top}" x2="{X(0):.1f}" y2="{h - bottom}" '
                f'stroke="black"/>',
                f'<text x="{x0 + pw / 2}" y="{h - 12}" text-anchor="middle">'
                f'fine-tuning step</text>',
                f'<text x="{x0 + 16}" y="{h / 2}" transform="rotate(-90 {x0 + 16} {h / 2})" '
                f'text-anchor="middle">held-out loss</text>']
        for k in range(5):
            v = lo + (hi - lo) * k / 4
            out.append(f'<text x="{X(0) - 6:.1f}" y="{Y(v) + 4:.1f}" text-anchor="end">'
                       f'{v:.2f}</text>')
            out.append(f'<line x1="{X(0):.1f}" y1="{Y(v):.1f}" x2="{X(steps):.1f}" '
                       f'y2="{Y(v):.1f}" stroke="#ddd"/>')
        for k in range(5):
            s = round(steps * k / 4)
            out.append(f'<text x="{X(s):.1f}" y="{h - bottom + 16}" text-anchor="middle">'
                       f'{s}</text>')
        for n, (name, c) in enumerate(curves.items()):
            color = COLORS.get(name, "#2ca02c")
            pts = " ".join(f"{X(s):.1f},{Y(v):.1f}" for s, v in c)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
                       f'stroke-opacity="0.9" points="{pts}"/>')
            out += [f'<circle cx="{X(s):.1f}" cy="{Y(v):.1f}" r="2.5" fill="{color}"/>'
                    for s, v in c]
            out.append(f'<text x="{x0 + pw - right - 120}" y="{top + 16 + 16 * n}" '
                       f'fill="{color}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tgc", default=os.path.join(ROOT, "build", "bin", "tgc"))
    ap.add_argument("--model", default=os.path.join(ROOT, "examples", "tiny-llama.json"))
    ap.add_argument("--text-a", default=os.path.join(LICENSES, "GPL-3"))
    ap.add_argument("--text-b", default=None,
                    help="default: Apache-2.0, else another license Debian ships")
    ap.add_argument("--pretrain-steps", type=int, default=600)
    ap.add_argument("--pretrained", default=None,
                    help="skip pre-training: fine-tune this checkpoint (a pretrained.safetensors "
                         "an earlier run left in its --workdir)")
    ap.add_argument("--lr-pretrain", type=float, default=None,
                    help="default: the model file's training.lr")
    ap.add_argument("--steps", type=int, default=200, help="fine-tuning steps")
    ap.add_argument("--every", type=int, default=20, help="evaluate every N steps")
    ap.add_argument("--lr-full", type=float, default=1e-4)
    ap.add_argument("--lr-lora", type=float, default=1e-3)
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--lora-alpha", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--svg", default=os.path.join(ROOT, "docs", "lora-finetune.svg"))
    ap.add_argument("--workdir", default=None, help="keep the files here (default: a temporary directory)")
    args = ap.parse_args()
    if args.steps % args.every:
        sys.exit("--steps must be a multiple of --every")

    text_b = args.text_b
    if text_b is None:
        for name in ("Apache-2.0", "MPL-2.0", "GPL-2", "LGPL-2.1", "Artistic"):
            if os.path.isfile(os.path.join(LICENSES, name)):
                text_b = os.path.join(LICENSES, name)
                break
        else:
            sys.exit(f"no second license text in {LICENSES}")
    with open(args.model) as f:
        training = json.load(f).get("training", {})
    lr_pre = args.lr_pretrain or training.get("lr", 1e-3)

    tmp_ctx = None
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        tmp = args.workdir
    else:
        tmp_ctx = tempfile.TemporaryDirectory()
        tmp = tmp_ctx.name
    t_start = time.time()
    p = lambda name: os.path.join(tmp, name)
    size_a, cut_a = split(args.text_a, p("A-train"), p("A-heldout"))
    size_b, cut_b = split(text_b, p("B-train"), p("B-heldout"))

    base_exe, lora_exe = p("train"), p("train-lora")
    lora_flags = [f"--lora-r={args.lora_r}", f"--lora-alpha={args.lora_alpha}",
                  f"--lora-targets={TARGETS}"]
    run([args.tgc, args.model, "-o", base_exe])
    run([args.tgc, args.model, "-o", lora_exe] + lora_flags)
    stats = json.loads(subprocess.run([args.tgc, "stats", args.model, "--json"] + lora_flags,
                                      capture_output=True, text=True, check=True).stdout)

    # One step first: what the whole run will cost.
    sec_base = time_step(base_exe, p("A-train"), args.threads, tmp)
    sec_lora = time_step(lora_exe, p("B-train"), args.threads, tmp)
    points = args.steps // args.every + 1
    # An evaluation: 4 batches, each a whole step, plus the one no-op step.
    pretrain = 0 if args.pretrained else args.pretrain_steps
    estimate = (sec_base * (pretrain + 5 * (pretrain // 50))
                + sec_base * (args.steps + 4 * points) + sec_lora * (args.steps + 4 * points)
                + 5 * sec_base * 2 * points + 5 * sec_lora * 2 * points)
    print(f"one step: {sec_base * 1000:.0f} ms (full), {sec_lora * 1000:.0f} ms (LoRA) "
          f"at {args.threads} thread(s); estimated {estimate / 60:.1f} min", flush=True)

    # 1. Pre-training on A.
    pre = args.pretrained or p("pretrained.safetensors")
    if args.pretrained:
        print(f"pre-training skipped: {pre}", flush=True)
    else:
        run([base_exe, "--data", p("A-train"), "--eval-data", p("A-heldout"),
             "--eval-every", "50", "--data-order", "random", "--seed", str(args.seed),
             "--lr", repr(lr_pre), "--steps", str(args.pretrain_steps),
             "--threads", str(args.threads), "--save", pre, "--log", p("pretrain.jsonl"),
             "--quiet"])
        _, pre_evals = read_log(p("pretrain.jsonl"))
        print(f"pre-training: {args.pretrain_steps} steps at lr {lr_pre:g}, held-out A loss "
              + ", ".join(f"{v:.3f}" for _, v in sorted(pre_evals.items()))
              + f" (every 50 steps); {time.time() - t_start:.0f} s so far", flush=True)

    # 2, 3. The two fine-tunes on B.
    runs = {}
    for kind, exe, lr in (("LoRA", lora_exe, args.lr_lora), ("full", base_exe, args.lr_full)):
        runs[kind] = fine_tune(kind, exe, pre, p("B-train"), p("B-heldout"), lr, args.steps,
                               args.every, args.seed, args.threads, tmp)
        print(f"{kind} fine-tune: {args.steps} steps at lr {lr:g}; "
              f"{time.time() - t_start:.0f} s so far", flush=True)

    # 4. Held-out losses on B and A at every checkpoint (step 0: the
    # pretrained model, the same for both).
    ev = Evaluator(base_exe, lora_exe, pre, p("B-train"), args.threads, tmp)
    b0, a0 = ev(p("B-heldout")), ev(p("A-heldout"))
    curves = {("B", k): [(0, b0)] for k in runs}
    curves.update({("A", k): [(0, a0)] for k in runs})
    worst = 0.0
    for kind, (ckpts, in_run, _) in runs.items():
        for step, ckpt in sorted(ckpts.items()):
            kw = {"adapter": ckpt} if kind == "LoRA" else {"full": ckpt}
            b, a = ev(p("B-heldout"), **kw), ev(p("A-heldout"), **kw)
            worst = max(worst, abs(b - in_run[step]))
            curves[("B", kind)].append((step, b))
            curves[("A", kind)].append((step, a))
    if worst > 1e-4:
        sys.exit(f"evaluation runs disagree with the fine-tunes' own held-out B loss "
                 f"by {worst:.2g}")

    # 5. The table and the figure.
    model = os.path.basename(args.model)
    print()
    print(f"CPU: {cpu_model()}; {model} (bytes as tokens, batch "
          f"{training.get('batch_size')} x seq {training.get('seq_len')}), {args.threads} thread(s)")
    print(f"A = {args.text_a}: pre-trained on its first {cut_a} of {size_a} bytes, "
          + (f"{args.pretrain_steps} steps at lr {lr_pre:g}" if not args.pretrained
             else f"as {args.pretrained}"))
    print(f"B = {text_b}: fine-tuned on its first {cut_b} of {size_b} bytes, held out the "
          f"last {size_b - cut_b}")
    print(f"LoRA: r {args.lora_r}, alpha {args.lora_alpha}, {TARGETS}; "
          f"{stats['trainable_parameters']:,} trainable of {stats['parameters']:,} "
          f"parameters; lr {args.lr_lora:g}. Full: all {stats['parameters']:,}; "
          f"lr {args.lr_full:g}. Constant lr, AdamW, random windows, seed {args.seed}")
    print(f"{ev.runs} evaluation runs, each leaving its weights bit for bit; they agree with "
          f"the fine-tunes' own held-out B loss within {worst:.1g}")
    print()
    print("| step | B held-out, LoRA | B held-out, full | A held-out, LoRA | A held-out, full |")
    print("|---|---|---|---|---|")
    for i, (step, _) in enumerate(curves[("B", "LoRA")]):
        print(f"| {step} | " + " | ".join(f"{curves[(t, k)][i][1]:.4f}"
                                         for t in "BA" for k in ("LoRA", "full")) + " |")
    print()
    for k in ("LoRA", "full"):
        b, a = curves[("B", k)], curves[("A", k)]
        best_b = min(b, key=lambda sv: sv[1])
        print(f"{k:<4}: held-out B {b[0][1]:.4f} -> {b[-1][1]:.4f} ({b[-1][1] - b[0][1]:+.4f}; "
              f"lowest {best_b[1]:.4f} at step {best_b[0]}), held-out A {a[0][1]:.4f} -> "
              f"{a[-1][1]:.4f} ({a[-1][1] - a[0][1]:+.4f})")
    lora_b = curves[("B", "LoRA")][-1][1] < b0
    less_forgetting = (curves[("A", "LoRA")][-1][1] - a0) < (curves[("A", "full")][-1][1] - a0)
    print(f"held-out B falls under LoRA: {'yes' if lora_b else 'NO'}; held-out A rises less "
          f"under LoRA than under full fine-tuning after {args.steps} steps: "
          f"{'yes' if less_forgetting else 'NO'}")

    panels = [("held-out loss on B (the new text)",
               {k: curves[("B", k)] for k in ("LoRA", "full")}),
              ("held-out loss on A (the pre-training text)",
               {k: curves[("A", k)] for k in ("LoRA", "full")})]
    svg(panels, args.steps,
        f"{model}: pre-trained on GPL-3, fine-tuned on {os.path.basename(text_b)}; "
        f"LoRA r {args.lora_r} (lr {args.lr_lora:g}) vs full (lr {args.lr_full:g})",
        args.svg)
    print(f"wrote {args.svg}; {time.time() - t_start:.0f} s in all")
    if tmp_ctx:
        tmp_ctx.cleanup()


if __name__ == "__main__":
    sys.exit(main())
