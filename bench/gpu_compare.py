"""Compares a GPU run with the CPU reference of bench/gpu_check.sh: losses
step by step (relative), first-step gradients (norm-wise relative) and the
greedy generation's tokens and logits (norm-wise per step) within
the bundle's tolerance.txt (1e-3 when absent; with mixed precision 2e-2 for
the losses, 1e-2 for the gradients),
and prints ms/step, tokens/s and TFLOP/s. Plain Python (no numpy): the GPU
machine may have nothing else. Usage: gpu_compare.py BUNDLE OUT"""
import array
import json
import math
import os
import struct
import sys


def read_log(path):
    rows = []
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if "loss" in row:
                rows.append(row)
    return rows


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        values = array.array("f")
        values.frombytes(data[base + begin:base + end])
        tensors[name] = values
    return tensors


def read_floats(path):
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    return values


def compare_generation(bundle, out, tolerance):
    """The GPU's greedy tokens against the CPU's, and each step's logits
    (norm-wise relative)."""
    cpu = open(os.path.join(bundle, "cpu-generate.txt")).read().split()
    gpu = open(os.path.join(out, "gpu-generate.txt")).read().split()
    ok = True
    if cpu != gpu:
        ok = False
        first = next((i for i, (c, g) in enumerate(zip(cpu, gpu)) if c != g),
                     min(len(cpu), len(gpu)))
        print(f"FAIL: generation: the GPU's tokens differ from the CPU's "
              f"from new token {first} on")
    a = read_floats(os.path.join(out, "gpu-generate.logits"))
    b = read_floats(os.path.join(bundle, "cpu-generate.logits"))
    steps = len(cpu)
    if steps == 0 or len(a) != len(b) or len(b) % steps:
        print("FAIL: generation: the logits files differ in size")
        return False
    vocab = len(b) // steps
    worst = 0.0
    for s in range(steps):
        x, y = a[s * vocab:(s + 1) * vocab], b[s * vocab:(s + 1) * vocab]
        diff = math.sqrt(sum((p - q) ** 2 for p, q in zip(x, y)))
        norm = math.sqrt(sum(q * q for q in y)) or 1e-30
        worst = max(worst, diff / norm)
    print(f"generation: {len(gpu)} tokens, logits' worst relative error "
          f"{worst:.2e}")
    if not worst <= tolerance:
        ok = False
        print(f"FAIL: a step's logits differ by more than {tolerance:g}")
    return ok


def main():
    bundle, out = sys.argv[1], sys.argv[2]
    # tolerance.txt: the losses' tolerance, then the gradients'.
    loss_tolerance, grad_tolerance = 1e-3, 1e-3
    tolerance_file = os.path.join(bundle, "tolerance.txt")
    if os.path.exists(tolerance_file):
        loss_tolerance, grad_tolerance = map(
            float, open(tolerance_file).read().split())
    ok = True
    cpu = read_log(os.path.join(bundle, "cpu.jsonl"))
    gpu = read_log(os.path.join(out, "gpu.jsonl"))
    if len(cpu) != len(gpu):
        print(f"FAIL: {len(gpu)} GPU steps, {len(cpu)} CPU steps")
        return 1
    worst = max(abs(g["loss"] - c["loss"]) / abs(c["loss"])
                for c, g in zip(cpu, gpu))
    print(f"losses: {len(gpu)} steps, first {gpu[0]['loss']:.5f} (CPU "
          f"{cpu[0]['loss']:.5f}), last {gpu[-1]['loss']:.5f} (CPU "
          f"{cpu[-1]['loss']:.5f}), worst relative difference {worst:.2e}")
    if not worst <= loss_tolerance:
        ok = False
        print(f"FAIL: a loss differs by more than {loss_tolerance:g}")
    a = read_safetensors(os.path.join(out, "gpu-grads.safetensors"))
    b = read_safetensors(os.path.join(bundle, "cpu-grads.safetensors"))
    worst_grad, worst_name = 0.0, ""
    for name, y in b.items():
        x = a.get(name)
        if x is None or len(x) != len(y):
            print(f"FAIL: gradient {name} missing or mis-sized")
            return 1
        diff = math.sqrt(sum((p - q) ** 2 for p, q in zip(x, y)))
        norm = math.sqrt(sum(q * q for q in y)) or 1e-30
        if not diff / norm <= worst_grad:
            worst_grad, worst_name = diff / norm, name
    print(f"gradients: {len(b)} tensors, worst relative error "
          f"{worst_grad:.2e} ({worst_name})")
    if not worst_grad <= grad_tolerance:
        ok = False
        print(f"FAIL: a gradient differs by more than {grad_tolerance:g}")
    ok = compare_generation(bundle, out, loss_tolerance) and ok
    stats = json.load(open(os.path.join(bundle, "stats.json")))
    flops = sum(stats["flops"].values())
    times = sorted(row["ms"] for row in gpu[1:]) or [gpu[0]["ms"]]
    median = times[len(times) // 2]
    tokens = stats["batch_size"] * stats["seq_len"]
    print(f"GPU: median {median:.2f} ms/step, {tokens / (median / 1000):.0f} "
          f"tokens/s, {flops / (median / 1000) / 1e12:.3f} TFLOP/s "
          f"({flops / 1e9:.1f} GFLOP/step)")
    cpu_times = sorted(row["ms"] for row in cpu[1:])
    print(f"CPU (build machine): median {cpu_times[len(cpu_times) // 2]:.2f} "
          f"ms/step")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
