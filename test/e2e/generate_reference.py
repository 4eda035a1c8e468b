#!/usr/bin/env python3
"""Greedy generation in PyTorch for the generation tests, two ways: by
recomputing the whole forward for every new token (torch_models.py's model
of the family, whose logits are read at the last position), and with a KV
cache of its own (Llama-style models: keys and values of each layer kept and
extended one token at a time). Writes the random weights it uses.

usage: generate_reference.py --model CONFIG --weights OUT.safetensors
           --prompt-ids "1 2 3" --new-tokens N [--scale S] [--kv-cache]
Prints the new ids (space separated) on stdout, and on stderr the smallest
gap between the two largest logits of any step (a near tie makes any two
implementations' greedy choices legitimately differ from there on).
"""
import argparse
import sys

import torch
import torch.nn.functional as F

import safetensors_io as st
import torch_models as tm


def forward_logits(c, P, ids, loss_fn):
    """The family's logits for `ids` ([1, S]): the model computes its loss;
    the logits are what it hands F.cross_entropy."""
    captured = {}
    real = F.cross_entropy

    def capture(logits, *args, **kwargs):
        captured["logits"] = logits
        return real(logits, *args, **kwargs)

    F.cross_entropy = capture
    try:
        with torch.no_grad():
            loss_fn(c, P, ids, ids)
    finally:
        F.cross_entropy = real
    return captured["logits"].reshape(ids.shape[1], -1)


def llama_kv_cache_greedy(c, P, prompt, n):
    """Greedy decoding of a Llama-family model (llama, mistral, qwen2) with
    its own KV cache: each step projects only the new token, appends its
    rotated key and its value, and attends over the cache."""
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = tm.head_dim(c)
    eps = c.get("rms_norm_eps", 1e-6)
    theta, scaling = tm.rope_settings(c)
    total = len(prompt) + n
    cos, sin = tm.rope_cos_sin(total, hd, theta, torch.float64, scaling)
    windows = tm.layer_windows(c)
    layers = c["num_hidden_layers"]
    keys = [torch.zeros(1, kvh, 0, hd, dtype=torch.float64) for _ in range(layers)]
    values = [torch.zeros(1, kvh, 0, hd, dtype=torch.float64) for _ in range(layers)]
    head = P["model.embed_tokens.weight"] if tm.tied(c) else P["lm_head.weight"]
    act = {"silu": F.silu, "gelu": F.gelu,
           "gelu_pytorch_tanh": lambda t: F.gelu(t, approximate="tanh"),
           "relu": F.relu}[c.get("hidden_act", "silu")]
    out, tokens = [], list(prompt)
    with torch.no_grad():
        for pos in range(total - 1):
            x = F.embedding(torch.tensor([[tokens[pos]]]), P["model.embed_tokens.weight"])
            for i in range(layers):
                p = f"model.layers.{i}."

                def lin(t, name):
                    return F.linear(t, P[p + name + ".weight"], P.get(p + name + ".bias"))
                nrm = tm.rms_norm(x, P[p + "input_layernorm.weight"], eps)
                q = lin(nrm, "self_attn.q_proj").view(1, 1, h, hd).transpose(1, 2)
                k = lin(nrm, "self_attn.k_proj").view(1, 1, kvh, hd).transpose(1, 2)
                v = lin(nrm, "self_attn.v_proj").view(1, 1, kvh, hd).transpose(1, 2)
                cs, sn = cos[pos:pos + 1], sin[pos:pos + 1]
                q = q * cs + tm.rotate_half(q) * sn
                k = k * cs + tm.rotate_half(k) * sn
                keys[i] = torch.cat([keys[i], k], dim=2)
                values[i] = torch.cat([values[i], v], dim=2)
                K = keys[i].repeat_interleave(h // kvh, dim=1)
                V = values[i].repeat_interleave(h // kvh, dim=1)
                scores = (q @ K.transpose(-1, -2)) / hd ** 0.5
                if windows[i] is not None:
                    first = max(0, pos - windows[i] + 1)
                    scores[..., :first] = float("-inf")
                a = (scores.softmax(-1) @ V).transpose(1, 2).reshape(1, 1, h * hd)
                x = x + lin(a, "self_attn.o_proj")
                nrm = tm.rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
                x = x + lin(act(lin(nrm, "mlp.gate_proj")) * lin(nrm, "mlp.up_proj"),
                            "mlp.down_proj")
            if pos + 1 < len(prompt):
                continue
            logits = F.linear(tm.rms_norm(x, P["model.norm.weight"], eps), head)[0, -1]
            nxt = int(logits.argmax())
            out.append(nxt)
            tokens.append(nxt)
    return out


def round_linear_operands(P):
    """F.linear and GPT-2's Conv1D with their operands rounded to bf16,
    except where the weight is an embedding table (a tied head keeps f32, as
    tgc's does)."""
    tables = {id(t) for n, t in P.items()
              if n.endswith(("embed_tokens.weight", "wte.weight", "wpe.weight",
                             "embed_in.weight"))}
    real = F.linear

    def bf16(t):
        return t.to(torch.bfloat16).to(t.dtype)

    def linear(x, w, b=None):
        if id(w) in tables:
            return real(x, w, b)
        return real(bf16(x), bf16(w), None if b is None else bf16(b))

    F.linear = linear

    def conv1d(c, P, module, x):
        # GPT-2's Conv1D (x @ W + b, W [in, out]): tgc adds its bias after
        # the product, in f32 (autocast's addmm would round it).
        w, b = P[module + ".weight"], P[module + ".bias"]
        return real(bf16(x), bf16(w).t(), b)

    tm.conv1d = conv1d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--new-tokens", type=int, required=True)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply the random weights (peaked logits: fewer near ties)")
    ap.add_argument("--kv-cache", action="store_true",
                    help="decode with the script's own KV cache (llama family)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check-logits",
                    help="a generation executable's --dump-logits file: each "
                         "step's logits must match the reference's")
    ap.add_argument("--rtol", type=float, default=1e-4,
                    help="--check-logits: bound on each step's norm-wise error")
    ap.add_argument("--most", type=float, default=0.0,
                    help="--check-logits: this fraction of the steps must "
                         "also be within --rtol-most (a value rounded to "
                         "bf16 from either side of a rounding boundary "
                         "moves a few steps' logits by up to 2^-9)")
    ap.add_argument("--rtol-most", type=float, default=0.0)
    ap.add_argument("--bf16-products", action="store_true",
                    help="as --precision=bf16-mixed generation: every linear "
                         "layer but one reading an embedding table takes its "
                         "input, weight and bias rounded to bf16, as autocast "
                         "does (sums in f64)")
    args = ap.parse_args()

    c = tm.load_config(args.model)
    shapes, loss_fn = tm.family(c)
    P = tm.init_params(shapes(c), args.seed, torch.float64, tm.zero_centred_norms(c))
    with torch.no_grad():
        for name, t in P.items():
            if not (name.endswith("norm.weight") or ".ln_" in name):
                t.mul_(args.scale)
    st.save(args.weights, {n: t.detach().to(torch.float32) for n, t in P.items()})
    # The reference computes with the f32-rounded weights tgc reads.
    P = {n: t.detach().to(torch.float32).to(torch.float64) for n, t in P.items()}

    if args.bf16_products:
        round_linear_operands(P)

    prompt = [int(t) for t in args.prompt_ids.split()]
    if args.kv_cache:
        print(" ".join(map(str, llama_kv_cache_greedy(c, P, prompt, args.new_tokens))))
        return
    dumped = None
    if args.check_logits:
        import numpy as np
        dumped = torch.from_numpy(np.fromfile(args.check_logits, dtype="<f4")
                                  .astype("f8")).view(-1, c["vocab_size"])
        cap = c.get("final_logit_softcapping")
        if cap:  # the executable's logits come before the final soft cap
            dumped = cap * torch.tanh(dumped / cap)
    ids, out, gap, worst, errors = list(prompt), [], float("inf"), 0.0, []
    for step in range(args.new_tokens):
        logits = forward_logits(c, P, torch.tensor([ids]), loss_fn)[-1]
        if dumped is not None:
            if step >= dumped.shape[0]:
                sys.exit(f"--check-logits: {dumped.shape[0]} steps dumped, "
                         f"{args.new_tokens} expected")
            err = float((dumped[step] - logits).norm() / logits.norm())
            worst = max(worst, err)
            errors.append(err)
        top = torch.topk(logits, 2).values
        gap = min(gap, float(top[0] - top[1]))
        nxt = int(logits.argmax())
        out.append(nxt)
        ids.append(nxt)
    print(" ".join(map(str, out)))
    print(f"smallest top-2 logit gap: {gap:.3g}", file=sys.stderr)
    if dumped is not None:
        print(f"logits: largest norm-wise error of a step {worst:.3g}",
              file=sys.stderr)
        if worst > args.rtol:
            sys.exit(f"--check-logits: a step's logits differ by {worst:.3g} "
                     f"(norm-wise), above {args.rtol}")
        within = sum(e <= args.rtol_most for e in errors) / len(errors)
        if args.most and within < args.most:
            sys.exit(f"--check-logits: {within:.0%} of the steps' logits are "
                     f"within {args.rtol_most} (norm-wise), fewer than "
                     f"{args.most:.0%}")


if __name__ == "__main__":
    main()
