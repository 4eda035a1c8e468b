"""Loads an inference export (`--save-dtype bf16|f16`) into the PyTorch
reference model by Hugging Face name, strictly (the same names and shapes as
the model's state dict, nothing missing, nothing extra, as
load_state_dict(strict=True) demands), checks that every tensor is exactly
PyTorch's own rounding of the f32 checkpoint saved at the same step, and
that the reference model's loss with the exported weights is within the
dtype's precision of the loss with the f32 ones."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import safetensors_io as st  # noqa: E402
import torch_models as tm  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", required=True)
    p.add_argument("--export", required=True)
    p.add_argument("--f32", required=True)
    args = p.parse_args()
    c = tm.load_config(args.model)
    shapes, loss_fn = tm.family(c)
    expected = {name: list(shape) for name, shape in shapes(c)}
    exported = st.load(args.export)
    reference = {k: v for k, v in st.load(args.f32).items()
                 if not k.startswith("optimizer.")}
    got = {k: list(v.shape) for k, v in exported.items()}
    if got != expected:
        print("FAIL: names or shapes differ from the model's state dict:",
              sorted(set(got.items()) ^ set(expected.items()), key=str)[:5])
        return 1
    print(f"loaded strictly: {len(got)} tensors, dtype {next(iter(exported.values())).dtype}")
    for name, t in exported.items():
        rounded = reference[name].to(t.dtype)
        if not torch.equal(t.view(torch.int16), rounded.view(torch.int16)):
            print(f"FAIL: {name} is not PyTorch's rounding of the f32 weights")
            return 1
    print("every tensor equals PyTorch's rounding of the f32 checkpoint")
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, c["vocab_size"], (2, 16), generator=g)
    targets = torch.randint(0, c["vocab_size"], (2, 16), generator=g)
    with torch.no_grad():
        full = loss_fn(c, {k: v.float() for k, v in reference.items()}, ids, targets)
        low = loss_fn(c, {k: v.float() for k, v in exported.items()}, ids, targets)
    diff = abs(full.item() - low.item()) / abs(full.item())
    tol = 2e-2 if next(iter(exported.values())).dtype == torch.bfloat16 else 2e-3
    print(f"loss {low.item():.5f} vs f32 {full.item():.5f}, relative {diff:.2e}")
    print("PASS" if diff <= tol else f"FAIL (tolerance {tol:g})")
    return 0 if diff <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
