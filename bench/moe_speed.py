#!/usr/bin/env python3
"""Mixture of experts: tgc's MoE step against tgc's dense step with the same
active parameters, and against PyTorch eager's Hugging Face MoE block, side
by side in interleaved rounds (issue 43, "Speed, measured side by side at 1
thread").

  MoE:   examples/mixtral-d512-l8.json (8 experts, top-2, expert width 688)
  dense: examples/llama-d512-l8.json   (FFN width 1376 = 2 x 688)

Same width (512), layers (8), vocabulary (256) and tokens (batch 8 x 512).
Both are compiled with `tgc MODEL --optimizer=sgd` (with AdamW the update of
the E/k = 4x more expert parameters would dominate); the model files'
lr, weight_decay and grad_clip (1.0) stay, on both sides.

The PyTorch peer (this script with --peer, run by /usr/bin/python3 with
torch.set_num_threads(THREADS) and one BLAS pool: OMP_NUM_THREADS =
OPENBLAS_NUM_THREADS = THREADS, OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE
removed) trains the same config, batch and sequence length with
torch.optim.SGD (lr, weight_decay from the file, momentum 0 as tgc's default)
and clip_grad_norm_: test/e2e/torch_models.py's MixtralForCausalLM
(embedding, eager attention, RMSNorms, head and loss as the other peers of
bench/peer_pytorch.py) with its MoE block replaced by transformers'
MixtralSparseMoeBlock.forward as users run it (transformers 4.4x, eager):
router softmax in f32, torch.topk, renormalise, one_hot expert mask, then a
loop over the experts: torch.where on the mask, the selected rows gathered
(hidden_states[None, top_x]), the expert's SwiGLU (w2(silu(w1 x) * w3 x))
scaled by the routing weight, index_add_ into the output.

Each round runs tgc MoE, tgc dense, PyTorch MoE (and with --torch-dense
PyTorch's dense llama) once each, in that order; each run does WARMUP +
STEPS steps and its time is the median of the STEPS steps after the warm-up
(tgc: the per-step `ms` of its --log; PyTorch: perf_counter around
zero_grad, forward, backward, clip, step). Printed: every run, the medians
over the rounds, the ratios of those medians and the median of the per-round
ratios (a drift of the shared machine then cancels within a round), the load
average at each run, and `lscpu`'s model name. Not a test: quote the ratios
with the CPU model. Goals (issue 43): tgc MoE / tgc dense <= 1.3,
tgc MoE / PyTorch MoE <= 0.6.

  /usr/bin/python3 bench/moe_speed.py [--rounds 3] [--steps 3] [--warmup 1]
      [--threads 1] [--mcpu CPU] [--workdir DIR [--reuse]] [--torch-dense]
      [--tgc build/bin/tgc] [--moe MODEL] [--dense MODEL]

--workdir keeps the executables, logs and compile times there (default: a
temporary directory, removed). With --reuse an executable already in the
workdir that is newer than both tgc and its model file is not compiled again.
Expect minutes: at 1 thread on a 2-core EPYC a tgc step of these models
takes 5-15 s, PyTorch's 15-25 s, and the MoE compile about 20 s.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, HERE)
import compare  # noqa: E402

DONE = re.compile(r"done: (\d+) steps, mean ([\d.]+) ms/step \(median ([\d.]+)\).*?"
                  r"peak RSS ([\d.]+) MiB")


# ----------------------------------------------------------------------------
# The PyTorch peer (runs in its own /usr/bin/python3 process: --peer)
# ----------------------------------------------------------------------------

def hf_mixtral_block(tm):
    """transformers' MixtralSparseMoeBlock.forward (4.4x, eager) over
    torch_models' parameter dict, in torch_models.moe_block's signature:
    returns (output [B, S, D], router_logits [B*S, E])."""
    F = tm.F

    def expert(c, P, prefix, x):  # MixtralBlockSparseTop2MLP
        h = F.silu(tm.linear(c, P, prefix + "w1", x)) * tm.linear(c, P, prefix + "w3", x)
        return tm.linear(c, P, prefix + "w2", h)

    def block(c, m, P, b, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = tm.linear(c, P, b + "gate", hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=tm.torch.float)
        routing_weights, selected_experts = tm.torch.topk(routing_weights, m["top_k"], dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = tm.torch.zeros((batch_size * sequence_length, hidden_dim),
                                             dtype=hidden_states.dtype)
        expert_mask = F.one_hot(selected_experts, num_classes=m["experts"]).permute(2, 1, 0)
        for expert_idx in range(m["experts"]):
            idx, top_x = tm.torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert(c, P, f"{b}experts.{expert_idx}.", current_state) \
                * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        # torch_models.moe_loss tags the layer's routing record.
        tm.moe_record["layers"].append({})
        return final_hidden_states.reshape(batch_size, sequence_length, hidden_dim), router_logits
    return block


def peer(args):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
    import torch_models as tm
    torch.set_num_threads(args.threads)
    c = tm.load_config(args.peer)
    t = c.get("training", {})
    shapes, loss_fn = tm.family(c)
    if c["model_type"] in tm.MOE_FAMILIES:
        if c["model_type"] != "mixtral":
            sys.exit("moe_speed.py: the HF-style peer block is Mixtral's")
        tm.moe_block = hf_mixtral_block(tm)
    P = tm.init_params(shapes(c), 0, torch.float32, tm.zero_centred_norms(c))
    params = list(P.values())
    batch = t.get("batch_size", 8)
    seq = t.get("seq_len", c.get("max_position_embeddings"))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, c["vocab_size"], (batch, seq), generator=g)
    targets = torch.randint(0, c["vocab_size"], (batch, seq), generator=g)
    opt = torch.optim.SGD(params, lr=t.get("lr", 1e-3), momentum=t.get("momentum", 0.0),
                          weight_decay=t.get("weight_decay", 0.0))
    clip = t.get("grad_clip")
    times = []
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(c, P, ids, targets)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        t1 = time.perf_counter()
        if step >= args.warmup:
            times.append((t1 - t0) * 1000)
    print(json.dumps({"median_ms": statistics.median(times), "steps_ms": times,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "threads": torch.get_num_threads(), "final_loss": loss.item()}))


# ----------------------------------------------------------------------------
# The driver
# ----------------------------------------------------------------------------

def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def others():
    """Other processes running (state R) now, by command name: a build or
    test beside the benchmark shares the cores."""
    out = subprocess.run(["ps", "-eo", "pid=,stat=,comm="], capture_output=True, text=True).stdout
    names = sorted({parts[2] for parts in (l.split(None, 2) for l in out.splitlines())
                    if len(parts) == 3 and parts[1].startswith("R") and parts[2] != "ps"
                    and int(parts[0]) != os.getpid()})
    return ", ".join(names) or "none"


def compile_or_reuse(args, model, exe):
    """Compiles `model` with SGD to `exe`; returns a note for the header."""
    if args.reuse and os.path.exists(exe) and \
            os.path.getmtime(exe) > max(os.path.getmtime(args.tgc), os.path.getmtime(model)):
        return "reused"
    cmd = [args.tgc, model, "--optimizer=sgd", "-o", exe]
    if args.mcpu:
        cmd.append(f"--mcpu={args.mcpu}")
    out = subprocess.run(["/usr/bin/time", "-f", "wall_s=%e maxrss_kb=%M"] + cmd,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"moe_speed.py: {' '.join(cmd)} failed (exit status {out.returncode}):\n"
                 f"{out.stderr}")
    wall = float(re.search(r"wall_s=([\d.]+)", out.stderr).group(1))
    rss = int(re.search(r"maxrss_kb=(\d+)", out.stderr).group(1)) / 1024
    return f"compiled in {wall:.1f} s, {rss:.0f} MiB"


def run_tgc(args, exe, tag, round_):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    log = os.path.join(args.workdir, f"{tag}.round{round_}.jsonl")
    cmd = [exe, "--steps", str(args.warmup + args.steps), "--threads", str(args.threads),
           "--log", log]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"moe_speed.py: {' '.join(cmd)} failed (exit status {out.returncode}):\n"
                 f"{out.stderr[-2000:]}")
    with open(log) as f:
        rows = [json.loads(l) for l in f if '"ms"' in l and '"eval_loss"' not in l]
    steps = [r["ms"] for r in rows[args.warmup:]]
    done = [m for m in map(DONE.search, out.stderr.splitlines()) if m]
    r = {"median_ms": statistics.median(steps), "steps_ms": steps,
         "warmup_ms": [r["ms"] for r in rows[:args.warmup]]}
    if done:  # the executable's own summary (its mean and median count the warm-up steps)
        r.update(done_mean_ms=float(done[-1].group(2)), done_median_ms=float(done[-1].group(3)),
                 peak_rss_mib=float(done[-1].group(4)))
    return r


def run_torch(args, model):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    # One BLAS pool: OpenBLAS keeps its own threads besides torch's intra-op ones.
    env.update(OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads))
    cmd = ["/usr/bin/python3", os.path.abspath(__file__), "--peer", model,
           "--threads", str(args.threads), "--steps", str(args.steps),
           "--warmup", str(args.warmup)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"moe_speed.py: {' '.join(cmd)} failed (exit status {out.returncode}):\n"
                 f"{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(r):
    steps = ", ".join(f"{t / 1000:.2f}" for t in r["steps_ms"])
    extra = ""
    if "warmup_ms" in r:
        extra = f"; warm-up {', '.join(f'{t / 1000:.2f}' for t in r['warmup_ms'])} s"
    if "done_mean_ms" in r:
        extra += f"; its summary: mean {r['done_mean_ms'] / 1000:.2f} s, median " \
                 f"{r['done_median_ms'] / 1000:.2f} s (warm-up included)"
    return f"{r['median_ms'] / 1000:8.2f} s/step (steps {steps} s{extra}), " \
           f"peak RSS {r.get('peak_rss_mib', float('nan')):.0f} MiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tgc", default=os.path.join(ROOT, "build", "bin", "tgc"))
    ap.add_argument("--moe", default=os.path.join(ROOT, "examples", "mixtral-d512-l8.json"))
    ap.add_argument("--dense", default=os.path.join(ROOT, "examples", "llama-d512-l8.json"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first, per run")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--mcpu", help="compile tgc's executables for this CPU (x86-64-v3: as "
                    "for a CPU without AVX-512; PyTorch keeps the host's kernels)")
    ap.add_argument("--workdir", help="keep executables and logs here (default: a temporary "
                    "directory)")
    ap.add_argument("--reuse", action="store_true", help="reuse executables in --workdir "
                    "newer than tgc and their model file")
    ap.add_argument("--torch-dense", action="store_true",
                    help="also time PyTorch's dense llama each round")
    ap.add_argument("--peer", metavar="MODEL", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.rounds < 1:
        ap.error("--steps and --rounds must be >= 1, --warmup >= 0")
    if args.peer:
        return peer(args)
    compare.require_tgc(args.tgc)
    tmp = None
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="moe_speed.")
        args.workdir = tmp.name
    print(f"CPU: {compare.cpu_model()} ({os.cpu_count()} CPUs), {args.threads} thread(s), "
          f"{args.rounds} round(s) of {args.warmup} + {args.steps} steps; load average {load()}, "
          f"other processes running: {others()}",
          flush=True)
    moe_exe, dense_exe = (os.path.join(args.workdir, n) for n in ("moe", "dense"))
    for label, model, exe in (("tgc MoE", args.moe, moe_exe), ("tgc dense", args.dense, dense_exe)):
        note = compile_or_reuse(args, model, exe)
        mcpu = f" --mcpu={args.mcpu}" if args.mcpu else ""
        print(f"{label}: {os.path.relpath(model)} --optimizer=sgd{mcpu}: {note}", flush=True)
    runs = {
        "tgc MoE": lambda r: run_tgc(args, moe_exe, "moe", r),
        "tgc dense": lambda r: run_tgc(args, dense_exe, "dense", r),
        "torch MoE": lambda r: run_torch(args, args.moe),
    }
    if args.torch_dense:
        runs["torch dense"] = lambda r: run_torch(args, args.dense)
    results = {k: [] for k in runs}
    for r in range(args.rounds):
        for name, run in runs.items():
            before, busy = load(), others()
            t0 = time.time()
            results[name].append(run(r))
            print(f"round {r + 1} {name:<12}{fmt(results[name][-1])}; "
                  f"{time.time() - t0:.0f} s wall, load average {before} -> {load()}, "
                  f"other processes running before/after: {busy} / {others()}", flush=True)
    med = {k: statistics.median(x["median_ms"] for x in v) for k, v in results.items()}
    print("medians over the rounds:")
    for name, ms in med.items():
        print(f"  {name:<12}{ms / 1000:8.2f} s/step")

    def ratio(a, b, goal=None):
        per_round = [x["median_ms"] / y["median_ms"] for x, y in zip(results[a], results[b])]
        print(f"{a} / {b} = {med[a] / med[b]:.2f}"
              f"{f' (goal <= {goal})' if goal else ''}; per round "
              f"{', '.join(f'{x:.2f}' for x in per_round)}, their median "
              f"{statistics.median(per_round):.2f}")
    ratio("tgc MoE", "tgc dense", 1.3)
    ratio("tgc MoE", "torch MoE", 0.6)
    if args.torch_dense:
        ratio("torch MoE", "torch dense")
        ratio("tgc dense", "torch dense")
    print(f"load average at the end {load()}")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main())
