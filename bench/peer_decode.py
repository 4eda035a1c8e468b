#!/usr/bin/env python3
"""PyTorch eager peer of a tgc generation executable (bench/decode_speed.py):
a Llama-family model (llama, mistral, qwen2) in f32 with a preallocated KV
cache, batch 1: a prefill of the prompt, then greedy decode steps, each
projecting one token and attending over the cache. Random weights of the
model file's shapes. Prints one JSON line: prefill ms, decode tokens/s.
Run by /usr/bin/python3; the caller sets the thread count and removes
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE from the environment."""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
import torch_models as tm  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--cache", type=int, default=256)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    c = tm.load_config(args.model)
    if c["model_type"] not in ("llama", "mistral", "qwen2"):
        sys.exit("peer_decode.py: a llama, mistral or qwen2 model file")
    shapes, _ = tm.family(c)
    P = {n: t.detach() for n, t in tm.init_params(shapes(c), 0, torch.float32).items()}
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = tm.head_dim(c)
    eps = c.get("rms_norm_eps", 1e-6)
    layers = c["num_hidden_layers"]
    theta, scaling = tm.rope_settings(c)
    cos, sin = tm.rope_cos_sin(args.cache, hd, theta, torch.float32, scaling)
    K = torch.zeros(layers, 1, kvh, args.cache, hd)
    V = torch.zeros(layers, 1, kvh, args.cache, hd)
    head = P["model.embed_tokens.weight"] if tm.tied(c) else P["lm_head.weight"]

    def step(ids, start):
        """Tokens `ids` at positions start.. : their last logits."""
        S = ids.shape[1]
        x = F.embedding(ids, P["model.embed_tokens.weight"])
        cs, sn = cos[start:start + S], sin[start:start + S]
        end = start + S
        mask = torch.full((S, end), float("-inf")).triu(start + 1)
        for i in range(layers):
            p = f"model.layers.{i}."

            def lin(t, name):
                return F.linear(t, P[p + name + ".weight"], P.get(p + name + ".bias"))
            n = tm.rms_norm(x, P[p + "input_layernorm.weight"], eps)
            q = lin(n, "self_attn.q_proj").view(1, S, h, hd).transpose(1, 2)
            k = lin(n, "self_attn.k_proj").view(1, S, kvh, hd).transpose(1, 2)
            v = lin(n, "self_attn.v_proj").view(1, S, kvh, hd).transpose(1, 2)
            q = q * cs + tm.rotate_half(q) * sn
            K[i, :, :, start:end] = k * cs + tm.rotate_half(k) * sn
            V[i, :, :, start:end] = v
            keys = K[i, :, :, :end].repeat_interleave(h // kvh, dim=1)
            values = V[i, :, :, :end].repeat_interleave(h // kvh, dim=1)
            scores = q @ keys.transpose(-1, -2) / hd ** 0.5 + mask
            a = (scores.softmax(-1) @ values).transpose(1, 2).reshape(1, S, h * hd)
            x = x + lin(a, "self_attn.o_proj")
            n = tm.rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
            x = x + lin(F.silu(lin(n, "mlp.gate_proj")) * lin(n, "mlp.up_proj"), "mlp.down_proj")
        return F.linear(tm.rms_norm(x[:, -1:], P["model.norm.weight"], eps), head)[0, -1]

    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, c["vocab_size"], (1, args.prompt_tokens), generator=g)
    with torch.no_grad():
        t0 = time.perf_counter()
        logits = step(prompt, 0)
        prefill = time.perf_counter() - t0
        pos = args.prompt_tokens
        t0 = time.perf_counter()
        for _ in range(args.new_tokens):
            nxt = logits.argmax().view(1, 1)
            logits = step(nxt, pos)
            pos += 1
        decode = time.perf_counter() - t0
    print(json.dumps({"prefill_ms": prefill * 1e3,
                      "decode_tokens_per_s": args.new_tokens / decode}))


if __name__ == "__main__":
    main()
