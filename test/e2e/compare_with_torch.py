#!/usr/bin/env python3
"""Compares tgc's train step with PyTorch on the same weights and batch.

  grads mode: loss and every weight gradient of one step;
  train mode: N optimizer steps (with the model file's optimizer and
              clipping) on one batch: the loss curve and final weights.

With --autocast bf16 PyTorch runs the forward pass under CPU autocast
(bf16 products) and tgc's side is compiled with --precision=bf16-mixed; the
two round differently, so each tensor is compared norm-wise,
||tgc - torch|| / ||torch|| <= --norm-tol. Where PyTorch's autocast itself
is further than that from the exact (f64) gradient (its kernels for a CPU
without AVX512-BF16 round more), a tensor also passes when tgc's is within
twice autocast's distance of the exact one (the floor factor of
compare_grads.py: a gradient that nearly cancels, such as a key bias's, is
a few percent off in any bf16 implementation).

With --freeze REGEX the parameters whose whole name matches (re.fullmatch)
are frozen on PyTorch's side (requires_grad=False, left out of the
optimizer); tgc-ref gets the same --freeze, and an executable must have
been compiled with it. tgc must return no gradient for them, and (train
mode) leave them bit-identical.

With --lora-r R (--lora-alpha, --lora-targets, --lora-rslora: tgc's flags)
PyTorch's model gains PEFT's adapters (torch_models.lora_targets: the
modules PEFT's target_modules select; result = base(x) +
lora_B(lora_A(x)) * scaling) and every other parameter is frozen, as
`tgc --lora-r` does. The adapters are not PEFT's initial ones: A is
U(-1/sqrt(in), 1/sqrt(in)) as PEFT draws it, but B is N(0, 0.02) instead of
zero, so that the LoRA path changes the loss and A's gradient is not zero
(--lora-zero-b: zero, as PEFT starts). Both are in the --init file, under
tgc's names (NAME.lora_A.weight). tgc-ref gets the same flags; an
executable must have been compiled with them. In train mode an executable
also writes --save DIR (its adapters, compared with PyTorch's by norm, under
PEFT's names) and --merge-to (for check_lora_merge.py) in the workdir.

Mixtures of experts (mixtral, qwen2_moe, qwen3_moe, olmoe): the reference
prints each MoE layer's tokens per expert to stderr, with how many tokens
tie at their k-th choice and the smallest margin there (train mode: the
smallest non-zero margin over all steps, where f32 rounding could flip a
choice). --aux-loss on|off overrides the config's output_router_logits
(tgc-ref gets --aux-loss too; an executable must have been compiled with
it); with it on, the load-balancing loss must also come back on its own
(aux_loss in out.safetensors, or each --log row's aux_loss) and is compared.
--moe-routing stress rewrites the initial weights (torch_models.moe_stress)
so that in the first MoE layer one expert gets every token, some get none
and the rest tie exactly, and in the second all E router logits tie; it
fails unless the reference's routing shows exactly that (grads mode only).

tgc's side is run by a tgc tool that takes --init/--batch/-o (the reference
interpreter `tgc-ref`, or a compiled executable's wrapper). Prints the worst
errors and 'PASS'/'FAIL' per tensor class; exits 1 on any failure."""
import argparse
import os
import re
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io as st  # noqa: E402
import torch_models as tm  # noqa: E402


def make_batch(c, batch, seq, seed):
    g = torch.Generator().manual_seed(seed + 1)
    if c["model_type"] == "mlp":
        features = torch.randn(batch, c["layers"][0], generator=g)
        labels = torch.randint(0, c["layers"][-1], (batch,), generator=g, dtype=torch.int32)
        return {"features": features, "labels": labels}
    v = c["vocab_size"]
    ids = torch.randint(0, v, (batch, seq), generator=g, dtype=torch.int32)
    targets = torch.randint(0, v, (batch, seq), generator=g, dtype=torch.int32)
    targets[0, 0] = -100  # ignored position, as HF's loss
    return {"input_ids": ids, "targets": targets}


def exe_batches(c, batch, seq, steps, seed, workdir):
    """Data file for a compiled executable and the batches its runtime will
    read from it (sequential order: row i of step t starts at (t*B+i)*S)."""
    g = torch.Generator().manual_seed(seed + 1)
    batches = []
    if c["model_type"] == "mlp":
        rows = batch * steps
        x = torch.randn(rows, c["layers"][0], generator=g)
        y = torch.randint(0, c["layers"][-1], (rows,), generator=g)
        path = os.path.join(workdir, "data.csv")
        with open(path, "w") as f:
            for r in range(rows):
                f.write(",".join([str(int(y[r]))] + [repr(float(v)) for v in x[r]]) + "\n")
        # Parse back as the runtime does (f32), so both sides see the same numbers.
        for t in range(steps):
            sl = slice(t * batch, (t + 1) * batch)
            batches.append({"features": x[sl].clone(), "labels": y[sl].to(torch.int32)})
        return path, batches
    n = batch * seq * steps + 1
    tokens = torch.randint(0, c["vocab_size"], (n,), generator=g, dtype=torch.int32)
    path = os.path.join(workdir, "tokens.bin")
    tokens.to(torch.int16).numpy().astype("<u2").tofile(path)
    for t in range(steps):
        ids = torch.stack([tokens[(t * batch + i) * seq:(t * batch + i) * seq + seq] for i in range(batch)])
        tg = torch.stack([tokens[(t * batch + i) * seq + 1:(t * batch + i) * seq + seq + 1] for i in range(batch)])
        batches.append({"input_ids": ids, "targets": tg})
    return path, batches


def report_routing(c, stressed):
    """Prints the reference's routing of its last forward pass to stderr;
    with --moe-routing stress (`stressed`: the layers it rewrote), the
    number of routing cases that did not happen."""
    m = tm.moe_config(c)
    k, e = m["top_k"], m["experts"]
    failed = 0
    for r in tm.moe_record["layers"]:
        print(f"routing layer {r['layer']}: tokens per expert {r['counts']}, "
              f"{r['ties']} tied at choice {k}, smallest margin {r['margin']:.3e}",
              file=sys.stderr)
        if r["layer"] not in stressed:
            continue
        # Both layers give experts 0..k-1 every token. In the first the k-th
        # choice ties (logit 0) when there are k - 1 >= 1 tied experts and
        # one more behind them; in the second all E logits tie.
        tokens = sum(r["counts"]) // k
        want = [tokens] * k + [0] * (e - k)
        ties = 2 <= k <= e - 2 if r["layer"] == stressed[0] else k < e
        cases = r["counts"] == want and r["ties"] == (tokens if ties else 0)
        print(f"stress layer {r['layer']}: {'as planned' if cases else 'NOT as planned'} "
              f"(tokens per expert {want}, {tokens if ties else 0} tied at choice {k})",
              file=sys.stderr)
        failed += not cases
    if failed:
        print(f"FAIL routing: {failed} stressed layers not routed as planned")
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", help="tgc-ref (reference interpreter)")
    ap.add_argument("--exe", help="a compiled training executable instead of --tool")
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--seq-len", type=int, default=8)
    ap.add_argument("--dtype", choices=["f32", "f64"], default="f32")
    ap.add_argument("--train-steps", type=int, default=0)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-6)
    ap.add_argument("--weights-rtol", type=float, default=None,
                    help="train mode: also bound the final weights' error")
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none",
                    help="PyTorch's forward under torch.autocast (grads mode)")
    ap.add_argument("--norm-tol", type=float, default=2e-2,
                    help="with --autocast: bound on each tensor's norm-wise error")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--freeze", default=None,
                    help="freeze the parameters whose whole name matches")
    ap.add_argument("--lora-r", type=int, default=0,
                    help="LoRA adapters of rank r (tgc --lora-r)")
    ap.add_argument("--lora-alpha", type=float, default=8.0)
    ap.add_argument("--lora-targets", default="q_proj,v_proj",
                    help="comma-separated target_modules, or all-linear")
    ap.add_argument("--lora-rslora", action="store_true")
    ap.add_argument("--lora-config", default=None,
                    help="a PEFT adapter_config.json for the LoRA settings instead of "
                         "the --lora flags (tgc --lora-config): regular-expression "
                         "targets, layers_to_transform, exclude_modules, rank_pattern, "
                         "alpha_pattern")
    ap.add_argument("--lora-zero-b", action="store_true",
                    help="B = 0 as PEFT initialises it (A's first gradient is then zero)")
    ap.add_argument("--aux-loss", choices=["config", "on", "off"], default="config",
                    help="MoE: the load-balancing loss as the config's output_router_logits "
                         "says, or on/off")
    ap.add_argument("--moe-routing", choices=["random", "stress"], default="random",
                    help="MoE: stress rewrites the routers (and the embedding's column 0) "
                         "for an expert with every token, experts with none, exact ties")
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    dtype = torch.float64 if args.dtype == "f64" else torch.float32
    c = tm.load_config(args.model)
    t = c.get("training", {})
    shapes, loss_fn = tm.family(c)
    P = tm.init_params(shapes(c), args.seed, dtype, tm.zero_centred_norms(c))
    moe = c["model_type"] in tm.MOE_FAMILIES
    if not moe and (args.aux_loss != "config" or args.moe_routing != "random"):
        sys.exit("--aux-loss and --moe-routing are for mixtures of experts")
    if args.moe_routing == "stress" and args.train_steps:
        # Adam's first step moves each tied (zero) router row by lr * sign(g):
        # rows with the same signs stay tied or within ~1e-9, and which
        # expert wins is then decided by rounding.
        sys.exit("--moe-routing stress is for gradients (no --train-steps): after one "
                 "step its tied routers are apart only by rounding")
    if args.aux_loss != "config":
        c["output_router_logits"] = args.aux_loss == "on"
    aux_on = moe and c.get("output_router_logits", False)
    stressed = tm.moe_stress(c, P) if args.moe_routing == "stress" else []
    frozen = {n for n in P if args.freeze is not None and re.fullmatch(args.freeze, n)}
    lora_flags = []
    if args.lora_config:
        import json
        with open(args.lora_config) as f:
            c.setdefault("training", {})["lora"] = json.load(f)
        args.lora_r = c["training"]["lora"]["r"]
    if args.lora_r:
        if args.freeze is not None:
            sys.exit("--lora-r freezes every parameter but the adapters: no --freeze")
        if args.lora_config:
            lora_flags = [f"--lora-config={args.lora_config}"]
        else:
            c.setdefault("training", {})["lora"] = {
                "r": args.lora_r, "lora_alpha": args.lora_alpha,
                "target_modules": args.lora_targets.split(","),
                "use_rslora": args.lora_rslora}
            lora_flags = [f"--lora-r={args.lora_r}", f"--lora-alpha={args.lora_alpha:g}",
                          f"--lora-targets={args.lora_targets}"]
            if args.lora_rslora:
                lora_flags.append("--lora-rslora")
        frozen = set(P)
        modules = tm.lora_targets(c, shapes(c))
        g = torch.Generator().manual_seed(args.seed + 2)
        for module, fan_in, fan_out in modules:
            r, _ = tm.lora_rank_alpha(c, module)
            bound = 1.0 / fan_in ** 0.5
            a = torch.rand(r, fan_in, generator=g, dtype=torch.float64)
            a = (2 * a - 1) * bound
            b = 0.02 * torch.randn(fan_out, r, generator=g, dtype=torch.float64)
            if args.lora_zero_b:
                b.zero_()
            a_name, b_name = tm.adapter_names(module)
            P[a_name] = a.to(dtype).requires_grad_(True)
            P[b_name] = b.to(dtype).requires_grad_(True)
        kinds = ", ".join(sorted({m.rsplit(".", 1)[-1] for m, _, _ in modules}))
        scales = sorted({round(tm.lora_scaling(c, m), 6) for m, _, _ in modules})
        print(f"LoRA: {len(modules)} modules adapted ({kinds}), r={args.lora_r}, "
              f"scaling {', '.join(f'{x:g}' for x in scales)}")
    for n in frozen:
        P[n].requires_grad_(False)
    initial = {n: P[n].detach().clone() for n in frozen}
    trainable = [p for n, p in P.items() if n not in frozen]
    batch = make_batch(c, args.batch_size, args.seq_len, args.seed)
    inputs = [batch[k].to(dtype) if batch[k].is_floating_point() else batch[k] for k in batch]

    os.makedirs(args.workdir, exist_ok=True)
    wpath = os.path.join(args.workdir, "weights.safetensors")
    bpath = os.path.join(args.workdir, "batch.safetensors")
    opath = os.path.join(args.workdir, "out.safetensors")
    st.save(wpath, P)
    batches = None
    if args.exe:
        # The executable reads its own batches from a data file.
        steps = max(args.train_steps, 1)
        dpath, batches = exe_batches(c, args.batch_size, args.seq_len, steps, args.seed, args.workdir)
        batch = batches[0]
        inputs = [batch[k].to(dtype) if batch[k].is_floating_point() else batch[k] for k in batch]
        # The first batch as the executable reads it, for tgc-ref (the oracle).
        st.save(bpath, {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in batch.items()})
        lpath = os.path.join(args.workdir, "log.jsonl")
        cmd = [args.exe, "--init", wpath, "--data", dpath, "--steps", str(steps), "--quiet",
               "--log", lpath]
        if args.train_steps == 0:
            cmd += ["--dump-grads", opath]
        elif args.lora_r:
            # The adapters PEFT's way (--save DIR) and merged (--merge-to),
            # for the final adapters below and for check_lora_merge.py.
            cmd += ["--save", os.path.join(args.workdir, "adapters"),
                    "--merge-to", os.path.join(args.workdir, "merged.safetensors")]
        subprocess.run(cmd, check=True)
        if args.train_steps == 0:
            ours = st.load(opath)
        else:
            import json
            with open(lpath) as f:
                rows = [json.loads(line) for line in f if line.strip()]
            ours = {"losses": torch.tensor([r["loss"] for r in rows if "loss" in r], dtype=torch.float64),
                    "aux_losses": torch.tensor([r["aux_loss"] for r in rows if "aux_loss" in r],
                                               dtype=torch.float64),
                    "grad_norms": torch.tensor([r["grad_norm"] for r in rows if "grad_norm" in r],
                                               dtype=torch.float64)}
    else:
        st.save(bpath, {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in batch.items()})
        cmd = [args.tool, args.model, "--init", wpath, "--batch", bpath, "-o", opath,
               f"--batch-size={args.batch_size}", f"--train-steps={args.train_steps}"]
        if c["model_type"] != "mlp":
            cmd.append(f"--seq-len={args.seq_len}")
        if args.autocast == "bf16":
            cmd.append("--precision=bf16-mixed")
        if args.freeze is not None:
            cmd.append(f"--freeze={args.freeze}")
        if args.aux_loss != "config":
            cmd.append(f"--aux-loss={'true' if args.aux_loss == 'on' else 'false'}")
        cmd += lora_flags
        subprocess.run(cmd, check=True)
        ours = st.load(opath)

    failures = 0

    exact = {}

    def normwise(a, b):
        return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()

    def check(label, name, mine, ref, rtol=None):
        nonlocal failures
        rtol = args.rtol if rtol is None else rtol
        mine = mine.to(torch.float64)
        ref = ref.detach().to(torch.float64)
        if mine.shape != ref.shape:
            print(f"FAIL {label} {name}: shape {tuple(mine.shape)} vs {tuple(ref.shape)}")
            failures += 1
            return 0.0
        if args.autocast != "none":
            rel = normwise(mine, ref)
            if not rel <= args.norm_tol:
                if name in exact and normwise(mine, exact[name]) <= 2 * normwise(ref, exact[name]):
                    print(f"note {label} {name}: {rel:.3e} from autocast, but "
                          f"{normwise(mine, exact[name]):.3e} from the exact value "
                          f"(autocast: {normwise(ref, exact[name]):.3e})")
                    return normwise(mine, exact[name])
                failures += 1
                print(f"FAIL {label} {name}: norm-wise relative error {rel:.3e}")
            return rel
        err = (mine - ref).abs()
        bound = args.atol + rtol * ref.abs()
        rel = (err / ref.abs().clamp_min(args.atol / rtol)).max().item()
        if (err > bound).any():
            failures += 1
            print(f"FAIL {label} {name}: max abs err {err.max().item():.3e}, "
                  f"worst relative {rel:.3e}")
        return rel

    if args.train_steps == 0:
        precision = "bf16-mixed" if args.autocast == "bf16" else "fp32"
        if args.autocast != "none":
            # The exact gradients (f64), the yardstick for autocast's own error.
            P64 = {k: v.detach().double().requires_grad_(True) for k, v in P.items()}
            loss64 = loss_fn(c, P64, *[x.double() if x.is_floating_point() else x
                                       for x in inputs])
            loss64.backward()
            exact = {k: v.grad for k, v in P64.items()}
            exact["loss"] = loss64.detach()
        loss = tm.precision_loss(loss_fn, c, P, inputs, precision)
        loss.backward()
        worst = check("loss", "loss", ours["loss"], loss)
        print(f"loss tgc={ours['loss'].item():.8f} torch={loss.item():.8f}")
        if moe:
            failures += report_routing(c, stressed)
        if aux_on:
            aux = tm.moe_record["aux"]
            if "aux_loss" not in ours:
                failures += 1
                print(f"FAIL aux_loss: tgc did not report it (torch={aux.item():.8f})")
            else:
                worst = max(worst, check("aux_loss", "aux_loss", ours["aux_loss"].reshape(()), aux))
                print(f"aux_loss tgc={ours['aux_loss'].item():.8f} torch={aux.item():.8f}")
        worst_grad = 0.0
        for name, p in P.items():
            if name in frozen:
                if name in ours:
                    failures += 1
                    print(f"FAIL grad {name}: a gradient for a frozen parameter")
                continue
            if p.grad is None:
                sys.exit(f"{name}: PyTorch's model does not read it (torch_models.py "
                         f"applies no adapter there)")
            if name not in ours:
                failures += 1
                print(f"FAIL grad {name}: no gradient from tgc")
                continue
            worst_grad = max(worst_grad, check("grad", name, ours[name], p.grad))
        for name in sorted(set(ours) - set(P) - {"loss", "aux_loss"}):
            failures += 1
            print(f"FAIL grad {name}: tgc's gradient of a parameter PyTorch's model lacks")
        kind = "norm-wise relative error" if args.autocast != "none" else "relative error"
        if frozen:
            print(f"{len(frozen)} frozen parameters: no gradient")
        print(f"{len(P) - len(frozen)} gradients, worst {kind} {worst_grad:.3e} (loss {worst:.3e})")
    else:
        opt_name = t.get("optimizer", "adamw")
        lr = t.get("lr", 1e-3)
        if opt_name == "adamw":
            betas = tuple(t.get("betas", [0.9, 0.999]))
            opt = torch.optim.AdamW(trainable, lr=lr, betas=betas, eps=t.get("eps", 1e-8),
                                    weight_decay=t.get("weight_decay", 0.0))
        else:
            opt = torch.optim.SGD(trainable, lr=lr, momentum=t.get("momentum", 0.0),
                                  weight_decay=t.get("weight_decay", 0.0))
        losses, norms, aux_losses, closest = [], [], [], None
        for step in range(args.train_steps):
            if batches is not None:
                b = batches[step]
                inputs = [b[k].to(dtype) if b[k].is_floating_point() else b[k] for k in b]
            opt.zero_grad()
            loss = loss_fn(c, P, *inputs)
            loss.backward()
            if moe:
                if step == 0:
                    failures += report_routing(c, stressed)
                if aux_on:
                    aux_losses.append(tm.moe_record["aux"].item())
                for r in tm.moe_record["layers"]:
                    if r["margin"] > 0 and (closest is None or r["margin"] < closest[0]):
                        closest = (r["margin"], step, r["layer"])
            clip = t.get("grad_clip")
            norm = torch.nn.utils.clip_grad_norm_(trainable, clip if clip else float("inf"))
            opt.step()
            losses.append(loss.item())
            norms.append(norm.item())
        rel_loss = check("losses", "losses", ours["losses"],
                         torch.tensor(losses, dtype=torch.float64))
        if closest is not None:
            print(f"routing: smallest non-zero top-k margin over {args.train_steps} steps "
                  f"{closest[0]:.3e} (step {closest[1]}, layer {closest[2]})", file=sys.stderr)
        if aux_on:
            if "aux_losses" not in ours or ours["aux_losses"].numel() == 0:
                failures += 1
                print("FAIL aux_losses: tgc did not report them")
            else:
                check("aux_losses", "aux_losses", ours["aux_losses"],
                      torch.tensor(aux_losses, dtype=torch.float64))
        # Gradient norms magnify f32 rounding differences between the two
        # runs' summation orders; over many steps they are bounded loosely.
        check("grad_norms", "grad_norms", ours["grad_norms"],
              torch.tensor(norms, dtype=torch.float64),
              None if args.train_steps <= 5 else max(args.rtol, 2e-2))
        if args.exe and args.lora_r:
            # The trained adapters as --save wrote them, under PEFT's names.
            saved = st.load(os.path.join(args.workdir, "adapters", "adapter_model.safetensors"))
            worst_w = 0.0
            for name, p in P.items():
                if name in frozen:
                    continue
                peft = "base_model.model." + name
                if peft not in saved:
                    failures += 1
                    print(f"FAIL adapter {peft}: not saved")
                    continue
                # Norm-wise: Adam's steps magnify rounding in near-zero
                # gradients elementwise (see the weights below).
                rel = normwise(saved[peft].to(torch.float64), p.detach().to(torch.float64))
                if args.weights_rtol is not None and not rel <= args.weights_rtol:
                    failures += 1
                    print(f"FAIL adapter {peft}: norm-wise relative error {rel:.3e}")
                worst_w = max(worst_w, rel)
            for name in sorted(set(saved) - {"base_model.model." + n for n in P}):
                failures += 1
                print(f"FAIL adapter {name}: saved, but not an adapter of PyTorch's model")
            print(f"{len(saved)} adapters saved under PEFT's names, worst norm-wise "
                  f"relative error {worst_w:.3e}")
        if args.exe:
            print(f"{args.train_steps} steps: loss {losses[0]:.5f} -> {losses[-1]:.5f}; "
                  f"worst relative loss error {rel_loss:.3e}")
            print("PASS" if failures == 0 else f"FAIL ({failures} tensors)")
            return 1 if failures else 0
        # Weights after many Adam steps amplify rounding noise in near-zero
        # gradients (e.g. key biases), so they are bounded only on request.
        worst_w = 0.0
        for name, p in P.items():
            if name in frozen:
                if not torch.equal(ours[name].to(dtype), initial[name]):
                    failures += 1
                    print(f"FAIL weight {name}: a frozen parameter changed")
                continue
            if args.weights_rtol is not None:
                worst_w = max(worst_w, check("weight", name, ours[name], p, args.weights_rtol))
            else:
                ref_w = p.detach().to(torch.float64)
                err = (ours[name].to(torch.float64) - ref_w).abs()
                worst_w = max(worst_w, (err / ref_w.abs().clamp_min(1e-3)).max().item())
        if frozen:
            print(f"{len(frozen)} frozen parameters unchanged")
        print(f"{args.train_steps} steps: loss {losses[0]:.5f} -> {losses[-1]:.5f}; "
              f"worst relative loss error {rel_loss:.3e}, weights {worst_w:.3e}")
    print("PASS" if failures == 0 else f"FAIL ({failures} tensors)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
