#!/usr/bin/env python3
"""Checks a LoRA executable's --merge-to file against the adapters its --save
wrote and the base weights it was given (--init), computed here in f64:

  - adapter_config.json holds the settings the executable was compiled with
    (r, lora_alpha, use_rslora, target_modules; fan_in_fan_out for GPT-2's
    Conv1D weights);
  - the merged file holds exactly the base's tensors (Hugging Face names,
    shapes, f32);
  - an adapted weight is W + s·B·A (GPT-2's Conv1D [in, out]: W + s·(B·A)ᵀ)
    within --tol, s = lora_alpha / r (/ sqrt(r) with --lora-rslora; each
    module's own r and alpha with --lora-config's rank/alpha_pattern); that
    is, merged - s·B·A is the --init base within f32 rounding;
  - every other weight is the --init base, bit for bit;
  - with --fresh FILE (the --merge-to of a second run that loaded the same
    --init and the saved adapters and trained 0 steps), both merged files are
    identical bit for bit: the base weights the trained run held in memory
    after its last step are those it loaded, adapted ones included (a frozen
    weight the step wrote would change its merged value).

Tensors of --base named *.lora_A.weight / *.lora_B.weight (the adapters an
--init file may hold) are not base weights. Prints the worst errors and
PASS, or FAIL lines; exits 1 on any failure."""
import argparse
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io as st  # noqa: E402
import torch_models as tm  # noqa: E402

PEFT_PREFIX = "base_model.model."


def dtypes(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return {k: v["dtype"] for k, v in header.items() if k != "__metadata__"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--base", required=True, help="the --init file")
    ap.add_argument("--adapters", required=True, help="the directory --save wrote")
    ap.add_argument("--merged", required=True, help="the file --merge-to wrote")
    ap.add_argument("--fresh", help="--merge-to of a 0-step run on the saved adapters")
    ap.add_argument("--lora-r", type=int)
    ap.add_argument("--lora-alpha", type=float)
    ap.add_argument("--lora-targets")
    ap.add_argument("--lora-rslora", action="store_true")
    ap.add_argument("--lora-config", help="the settings as a PEFT adapter_config.json "
                    "(tgc --lora-config) instead of the --lora flags: each module's "
                    "s from its rank_pattern / alpha_pattern entry")
    ap.add_argument("--tol", type=float, default=1e-6)
    args = ap.parse_args()

    with open(args.model) as f:
        model_type = json.load(f)["model_type"]
    conv1d = model_type == "gpt2"
    if args.lora_config:
        with open(args.lora_config) as f:
            lora = json.load(f)
    elif args.lora_r and args.lora_alpha and args.lora_targets:
        lora = {"r": args.lora_r, "lora_alpha": args.lora_alpha,
                "use_rslora": args.lora_rslora,
                "target_modules": args.lora_targets.split(",")}
    else:
        sys.exit("give --lora-r, --lora-alpha and --lora-targets, or --lora-config")
    c = {"training": {"lora": lora}}
    failures = []

    with open(os.path.join(args.adapters, "adapter_config.json")) as f:
        config = json.load(f)
    expected = {"peft_type": "LORA", "r": lora["r"], "lora_alpha": lora.get("lora_alpha", 8),
                "use_rslora": lora.get("use_rslora", False), "fan_in_fan_out": conv1d}
    targets = lora["target_modules"]
    if isinstance(targets, str):
        expected["target_modules"] = targets
    elif "all-linear" not in targets:
        expected["target_modules"] = sorted(set(targets))
    for key in ("rank_pattern", "alpha_pattern"):
        expected[key] = lora.get(key) or {}
    for key in ("layers_to_transform", "layers_pattern", "exclude_modules"):
        value = lora.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, list) and key == "exclude_modules":
            value = sorted(set(value))
        expected[key] = value or None
    for key, value in expected.items():
        theirs = config.get(key)
        if key in ("target_modules", "exclude_modules") and isinstance(theirs, list):
            theirs = sorted(theirs)
        if theirs != value:
            failures.append(f"adapter_config.json: {key} is {theirs!r}, expected {value!r}")

    base = {k: v for k, v in st.load(args.base).items()
            if not k.endswith((".lora_A.weight", ".lora_B.weight",
                                  ".lora_embedding_A", ".lora_embedding_B"))}
    adapters = st.load(os.path.join(args.adapters, "adapter_model.safetensors"))
    merged = st.load(args.merged)
    kinds = dtypes(args.merged)

    if sorted(merged) != sorted(base):
        failures.append(f"merged tensors {sorted(set(merged) ^ set(base))} are not the "
                        f"base's")
    for name in sorted(k for k in kinds if kinds[k] != "F32"):
        failures.append(f"{name}: dtype {kinds[name]}, expected F32")

    adapted, identical, worst, delta_max = 0, 0, 0.0, 0.0
    scales = set()
    for name in sorted(set(merged) & set(base)):
        w, m = base[name].to(torch.float64), merged[name].to(torch.float64)
        if m.shape != w.shape:
            failures.append(f"{name}: shape {tuple(m.shape)}, base {tuple(w.shape)}")
            continue
        module = name[:-len(".weight")] if name.endswith(".weight") else None
        a_name, b_name = tm.adapter_names(module) if module else ("", "")
        a = adapters.get(PEFT_PREFIX + a_name)
        b = adapters.get(PEFT_PREFIX + b_name)
        if a is None or b is None:
            if not torch.equal(merged[name], base[name]):
                failures.append(f"{name}: not adapted, but not the --init base bit for bit")
            else:
                identical += 1
            continue
        adapted += 1
        r, _ = tm.lora_rank_alpha(c, module)
        if a.shape[0] != r:
            failures.append(f"{module}: adapters of rank {a.shape[0]}, expected {r}")
        s = tm.lora_scaling(c, module)
        scales.add(round(s, 6))
        delta = s * (b.to(torch.float64) @ a.to(torch.float64))
        if conv1d or module in tm.EMBEDDINGS:
            delta = delta.t()
        if delta.shape != w.shape:
            failures.append(f"{name}: s·B·A is {tuple(delta.shape)}, the weight {tuple(w.shape)}")
            continue
        err = (m - (w + delta)).abs().max().item()
        worst = max(worst, err)
        delta_max = max(delta_max, delta.abs().max().item())
        if not err <= args.tol:
            failures.append(f"{name}: |merged - (W + s·B·A)| up to {err:.3e}")
    used = {PEFT_PREFIX + adapter
            for n in merged for adapter in tm.adapter_names(n[:-len('.weight')])}
    for name in sorted(set(adapters) - used):
        failures.append(f"{name}: an adapter of no merged weight")
    if adapted == 0 or delta_max == 0.0:
        failures.append("no weight was changed by its adapters: the check is vacuous")

    print(f"{adapted} adapted weights: merged = W + s·B·A within {worst:.3e} "
          f"(s = {', '.join(f'{x:g}' for x in sorted(scales))}, "
          f"|s·B·A| up to {delta_max:.3e})")
    print(f"{identical} other weights: the --init base bit for bit")

    if args.fresh:
        fresh = st.load(args.fresh)
        differ = [n for n in sorted(set(merged) | set(fresh))
                  if n not in merged or n not in fresh or not torch.equal(merged[n], fresh[n])]
        for name in differ:
            failures.append(f"{name}: merged after training differs from the merge of the "
                            f"loaded base with the saved adapters")
        print(f"{len(merged) - len(differ)} of {len(merged)} merged weights identical to the "
              f"0-step merge of the --init base: the frozen base did not change")

    for f in failures:
        print("FAIL " + f)
    print("PASS" if not failures else f"FAIL ({len(failures)})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
