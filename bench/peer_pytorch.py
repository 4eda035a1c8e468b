#!/usr/bin/env python3
"""PyTorch eager peer for bench/compare.py: trains the same model file with
the same optimizer, batch and data shape, and prints one JSON line with the
median ms/step and peak RSS. Run by Debian's /usr/bin/python3 (torch with
OpenBLAS; --precision bf16-mixed runs the forward pass under CPU autocast,
PyTorch's own bf16 mixed precision); the caller removes OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE from this
process's environment."""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
import torch_models as tm  # noqa: E402


class LoraFunctional:
    """torch.nn.functional for torch_models with PEFT's LoRA forward on the
    targeted weights: base(x) + lora_B(lora_A(x)) * scaling."""

    def __init__(self, adapters, scaling):
        self.adapters, self.scaling = adapters, scaling

    def __getattr__(self, name):
        return getattr(torch.nn.functional, name)

    def linear(self, x, weight, bias=None):
        y = torch.nn.functional.linear(x, weight, bias)
        ab = self.adapters.get(id(weight))
        if ab is None:
            return y
        a, b = ab
        return y + torch.nn.functional.linear(torch.nn.functional.linear(x, a), b) * self.scaling


def add_lora(P, r, alpha, targets):
    """Freezes P and adds adapters (A Kaiming-uniform, B zero, as PEFT) to the
    weights of the targeted nn.Linear modules; returns the adapters."""
    adapters, trainable = {}, []
    for name, w in P.items():
        w.requires_grad_(False)
        module = name[:-len(".weight")] if name.endswith(".weight") else None
        if module and w.dim() == 2 and any(module == t or module.endswith("." + t)
                                           for t in targets):
            out, fan_in = w.shape
            a = torch.empty(r, fan_in).uniform_(-fan_in ** -0.5, fan_in ** -0.5)
            b = torch.zeros(out, r)
            a.requires_grad_(True)
            b.requires_grad_(True)
            adapters[id(w)] = (a, b)
            trainable += [a, b]
    if not trainable:
        sys.exit(f"peer_pytorch.py: the LoRA targets {targets} match no weight")
    tm.F = LoraFunctional(adapters, alpha / r)
    return trainable


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--precision", choices=["fp32", "bf16-mixed"], default="fp32",
                    help="bf16-mixed: the forward pass under torch.autocast('cpu', bfloat16)")
    ap.add_argument("--lora-r", type=int, default=0,
                    help="train LoRA adapters of this rank (PEFT's forward), the rest frozen")
    ap.add_argument("--lora-alpha", type=float, default=8.0)
    ap.add_argument("--lora-targets", default="q_proj,v_proj")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    c = tm.load_config(args.model)
    t = c.get("training", {})
    shapes, loss_fn = tm.family(c)
    P = tm.init_params(shapes(c), 0, torch.float32, tm.zero_centred_norms(c))
    trainable = list(P.values())
    if args.lora_r:
        trainable = add_lora(P, args.lora_r, args.lora_alpha, args.lora_targets.split(","))
    batch = t.get("batch_size", 8)
    g = torch.Generator().manual_seed(1)
    if c["model_type"] == "mlp":
        inputs = [torch.randn(batch, c["layers"][0], generator=g),
                  torch.randint(0, c["layers"][-1], (batch,), generator=g)]
    else:
        seq = t.get("seq_len", c.get("max_position_embeddings", c.get("n_positions")))
        inputs = [torch.randint(0, c["vocab_size"], (batch, seq), generator=g),
                  torch.randint(0, c["vocab_size"], (batch, seq), generator=g)]
    if t.get("optimizer", "adamw") == "adamw":
        opt = torch.optim.AdamW(trainable, lr=t.get("lr", 1e-3),
                                betas=tuple(t.get("betas", [0.9, 0.999])),
                                eps=t.get("eps", 1e-8), weight_decay=t.get("weight_decay", 0.0))
    else:
        opt = torch.optim.SGD(trainable, lr=t.get("lr", 1e-3), momentum=t.get("momentum", 0.0))
    clip = t.get("grad_clip")
    times = []
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = tm.precision_loss(loss_fn, c, P, inputs, args.precision)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(trainable, clip)
        opt.step()
        t1 = time.perf_counter()
        if step >= args.warmup:
            times.append((t1 - t0) * 1000)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"median_ms": statistics.median(times), "peak_rss_mib": rss,
                      "threads": torch.get_num_threads(), "final_loss": loss.item()}))


if __name__ == "__main__":
    main()
