#!/usr/bin/env python3
"""GEMM: tgc's CPU matmul code generation against OpenBLAS (through torch).

For each f32 shape C[M,N] = A[M,K] @ B[K,N] (row-major):

  tgc      a func.func with linalg.fill + linalg.matmul on tensors, lowered by
           the project's own CPU pipeline (`tgc-opt --tgc-cpu-lowering`, tile
           model fed with this machine's vector width, registers, L1d, L2),
           `mlir-translate --mlir-to-llvmir`, every defined function given
           "prefer-vector-width"/"min-legal-vector-width" = the vector width
           (what `tgc --emit=llvm` does, lib/Target/CPU/CPUTarget.cpp), then
           `clang-22 -O3 -march=native`, linked with bench/gemm_harness.c,
           libtgc_runtime.a (only its arena allocator is pulled in) and
           libomp. The harness checks the first result against a double
           reference (fails loudly above 1e-4), then times calls one by one.
  OpenBLAS torch.mm(a, b, out=c) in a persistent subprocess per thread count
           (torch.set_num_threads(T), OMP/OPENBLAS_NUM_THREADS=T, and
           OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed from its environment).

Both sides: one untimed call (tgc: the checked one), one timed warm-up call,
then max(MIN_REPS, TARGET_SECONDS / warm-up) calls (at most MAX_REPS),
timed one by one; the table shows medians. The tgc executable runs with
OMP_NUM_THREADS=T. Shapes and threads are interleaved (for each shape, for
each T: tgc, then torch), so slow drifts on a shared machine hit both.
On tiny shapes the peer's time includes Python's call overhead (~2-5 us).

  /usr/bin/python3 bench/gemm.py                 # all shapes, threads 1,2 (~3-5 min)
  /usr/bin/python3 bench/gemm.py --quick         # 3 shapes, 10-30 s smoke run
  /usr/bin/python3 bench/gemm.py --check-only    # correctness of every shape, no timing/peer
  /usr/bin/python3 bench/gemm.py --threads 1 --shapes "1024,1024,1024;111,96,259"
  /usr/bin/python3 bench/gemm.py --tiles 128,256,128,4,64 --json out.json

Not a test: numbers vary with the machine and its load; quote the ratios.
"""
import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LLVM_BIN = "/usr/lib/llvm-22/bin"
LLVM_LIB = "/usr/lib/llvm-22/lib"

# (M, N, K, origin). Row-major C[M,N] = A[M,K] @ B[K,N].
# Tiny llama (examples/tiny-llama.json): batch 8 x seq 128 = 1024 rows,
# hidden 256, intermediate 688, vocab 256, 4 heads of 64.
# GPT-2 small (examples/gpt2-small.json) at batch 4 x seq 256 = 1024 rows,
# n_embd 768, MLP 3072, vocab 50257.
SHAPES = [
    (1024, 1024, 1024, "square reference"),
    (1024, 256, 256, "tiny llama: q/k/v/o proj, lm head (vocab 256); their dX"),
    (1024, 688, 256, "tiny llama: MLP gate/up; dX of down"),
    (1024, 256, 688, "tiny llama: MLP down; dX of gate/up"),
    (128, 128, 64, "tiny llama attn per (batch,head): Q.K^T, dO.V^T"),
    (128, 64, 128, "tiny llama attn per (batch,head): P.V, dS.K, dS^T.Q, P^T.dO"),
    (256, 256, 1024, "tiny llama dW = X^T.dY: q/k/v/o, lm head"),
    (256, 688, 1024, "tiny llama dW = X^T.dY: MLP gate/up"),
    (688, 256, 1024, "tiny llama dW = H^T.dY: MLP down"),
    (1024, 2304, 768, "gpt2-small b4 s256: qkv (c_attn)"),
    (1024, 768, 768, "gpt2-small: attn out proj (c_proj)"),
    (1024, 3072, 768, "gpt2-small: MLP c_fc"),
    (1024, 768, 3072, "gpt2-small: MLP c_proj"),
    (1024, 50257, 768, "gpt2-small: lm head"),
    (768, 50257, 1024, "gpt2-small: lm head dW = X^T.dLogits"),
    (37, 37, 16, "awkward: primes, tiny"),
    (1, 50257, 768, "awkward: one row (decode lm head, GEMV)"),
    (111, 96, 259, "awkward: odd M, K"),
]
QUICK_SHAPES = [(1024, 1024, 1024), (1024, 688, 256), (111, 96, 259)]


# ---------------------------------------------------------------- the CPU

def describe_cpu():
    """This machine, as tgc's describeCPU("native") sees it (lib/Target/CPU/CPUTarget.cpp):
    avx512f -> 512 bits / 32 registers, avx -> 256 / 16, else 128 / 16; L1d and L2
    from sysfs cpu0, else tgc's defaults (32 KiB, 1 MiB)."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if "avx512f" in flags:
        bits, regs = 512, 32
    elif "avx" in flags:  # describeCPU tests "avx" (brief: avx2; every avx2 CPU has avx)
        bits, regs = 256, 16
    else:
        bits, regs = 128, 16

    def cache(level, kind):
        for index in range(8):
            d = f"/sys/devices/system/cpu/cpu0/cache/index{index}/"
            try:
                lvl = open(d + "level").read().strip()
            except OSError:
                break
            try:
                typ = open(d + "type").read().strip()
                size = open(d + "size").read().strip()
            except OSError:
                continue
            if lvl != str(level) or typ != kind:
                continue
            m = re.fullmatch(r"(\d+)([KM]?)", size)
            if not m:
                return 0
            return int(m.group(1)) * {"": 1, "K": 1024, "M": 1 << 20}[m.group(2)]
        return 0

    model = platform.processor() or "unknown"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"^Model name:\s*(.+)$", out, re.M)
        if m:
            model = m.group(1).strip()
    except OSError:
        pass
    return {"model": model, "vector_bits": bits, "vector_registers": regs,
            "l1_bytes": cache(1, "Data") or 32768, "l2_bytes": cache(2, "Unified") or (1 << 20),
            "avx512f": "avx512f" in flags, "cpus": os.cpu_count()}


# ---------------------------------------------------------------- tgc

MLIR_TEMPLATE = """\
func.func @mm(%a: tensor<{M}x{K}xf32>, %b: tensor<{K}x{N}xf32>) -> tensor<{M}x{N}xf32> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{M}x{N}xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{M}x{K}xf32>, tensor<{K}x{N}xf32>)
                     outs(%c : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  return %r : tensor<{M}x{N}xf32>
}}
"""


def run_checked(cmd, what, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stderr.write(f"error: {what} failed (exit {p.returncode}):\n  {' '.join(cmd)}\n"
                         f"{p.stderr[-4000:]}\n")
        raise RuntimeError(what)
    return dt


def set_vector_width(ll_text, bits):
    """Gives every defined function "prefer-vector-width" and
    "min-legal-vector-width" = bits, as tgc's translateAndOptimize does."""
    attrs = f' "prefer-vector-width"="{bits}" "min-legal-vector-width"="{bits}"'
    out, count = [], 0
    for line in ll_text.splitlines(keepends=True):
        if line.startswith("define ") and line.rstrip().endswith("{"):
            stripped = line.rstrip()
            line = stripped[:-1].rstrip() + attrs + " {\n"
            count += 1
        out.append(line)
    if count == 0:
        raise RuntimeError("no function definitions in the LLVM IR")
    return "".join(out)


class Toolchain:
    def __init__(self, args, cpu, workdir):
        self.tgc_opt = args.tgc_opt
        self.translate = os.path.join(LLVM_BIN, "mlir-translate")
        self.clang = shutil.which("clang-22") or os.path.join(LLVM_BIN, "clang")
        self.runtime = args.runtime
        self.cpu, self.tiles, self.dir = cpu, args.tiles, workdir
        for tool in (self.tgc_opt, self.translate, self.clang, self.runtime):
            if not os.path.exists(tool):
                sys.exit(f"error: {tool} not found (build the project: bash scripts/build.sh)")
        self.harness = os.path.join(workdir, "gemm_harness.o")
        run_checked([self.clang, "-O2", "-march=native", "-std=gnu11", "-c",
                     os.path.join(ROOT, "bench", "gemm_harness.c"), "-o", self.harness],
                    "compiling bench/gemm_harness.c")

    def options(self):
        c = self.cpu
        opts = (f"function=mm vector-bits={c['vector_bits']} vector-registers={c['vector_registers']}"
                f" l1-cache-bytes={c['l1_bytes']} l2-cache-bytes={c['l2_bytes']}"
                f" threads={os.cpu_count()}")
        if self.tiles:
            opts += f" matmul-tiles={self.tiles}"
        return opts

    def build(self, m, n, k):
        """Returns (executable, {stage: seconds})."""
        base = os.path.join(self.dir, f"mm_{m}x{n}x{k}")
        with open(base + ".mlir", "w") as f:
            f.write(MLIR_TEMPLATE.format(M=m, N=n, K=k))
        times = {}
        times["tgc-opt"] = run_checked(
            [self.tgc_opt, base + ".mlir", f"--tgc-cpu-lowering={self.options()}",
             "-o", base + ".llvm.mlir"], f"tgc-opt on {m}x{n}x{k}")
        times["mlir-translate"] = run_checked(
            [self.translate, "--mlir-to-llvmir", base + ".llvm.mlir", "-o", base + ".raw.ll"],
            f"mlir-translate on {m}x{n}x{k}")
        with open(base + ".raw.ll") as f:
            ll = set_vector_width(f.read(), self.cpu["vector_bits"])
        with open(base + ".ll", "w") as f:
            f.write(ll)
        flags = ["-O3", "-march=native", "-Wno-override-module"]
        if self.cpu["avx512f"]:
            flags.append("-mprefer-vector-width=512")
        times["clang"] = run_checked([self.clang, *flags, "-c", base + ".ll", "-o", base + ".o"],
                                     f"clang on {m}x{n}x{k}")
        run_checked([self.clang, self.harness, base + ".o", self.runtime, f"-L{LLVM_LIB}",
                     "-lomp", f"-Wl,-rpath,{LLVM_LIB}", "-lm", "-o", base],
                    f"linking {m}x{n}x{k}")
        return base, times


def run_tgc(exe, m, n, k, threads, args):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cmd = [exe, str(m), str(n), str(k), str(args.min_reps), str(args.max_reps),
           str(args.target_seconds), str(args.check_macs)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    values = dict(re.findall(r"^(\w+)=(\S+)$", p.stdout, re.M))
    if p.returncode != 0:
        return {"error": (p.stderr.strip() or f"exit {p.returncode}")[-2000:],
                "max_rel_err": float(values.get("max_rel_err", "nan"))}
    return {"median_s": float(values["median_s"]), "min_s": float(values["min_s"]),
            "reps": int(values["reps"]), "first_call_s": float(values["first_call_s"]),
            "max_rel_err": float(values["max_rel_err"]),
            "checked_rows": int(values["checked_rows"])}


# ---------------------------------------------------------------- the peer

def peer_worker(threads):
    """Persistent torch process: reads one JSON request per line, answers one."""
    import torch
    torch.set_num_threads(threads)
    hello = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    try:
        import ctypes
        lib = ctypes.CDLL("libopenblas.so.0")
        for name in ("openblas_get_corename", "openblas_get_config"):
            fn = getattr(lib, name)
            fn.restype = ctypes.c_char_p
            hello[name[len("openblas_get_"):]] = fn().decode()
        hello["openblas_threads"] = lib.openblas_get_num_threads()
    except (OSError, AttributeError):
        hello["corename"] = "unknown (libopenblas.so.0 not loadable)"
    print(json.dumps(hello), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        m, n, k = req["m"], req["n"], req["k"]
        g = torch.Generator().manual_seed(0)
        a = torch.rand(m, k, generator=g) * 2 - 1
        b = torch.rand(k, n, generator=g) * 2 - 1
        c = torch.empty(m, n)
        torch.mm(a, b, out=c)
        t0 = time.perf_counter()
        torch.mm(a, b, out=c)
        warm = time.perf_counter() - t0
        reps = min(req["max_reps"], max(req["min_reps"], math.ceil(req["target"] / max(warm, 1e-9))))
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            torch.mm(a, b, out=c)
            times.append(time.perf_counter() - t0)
        del a, b, c
        print(json.dumps({"median_s": statistics.median(times), "min_s": min(times),
                          "reps": reps}), flush=True)


class Peer:
    def __init__(self, threads):
        env = {key: v for key, v in os.environ.items()
               if key not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
        # OpenBLAS keeps its own thread pool besides torch's intra-op threads.
        env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__),
                                      "--peer-worker", str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        self.info = self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the torch peer process died")
        return json.loads(line)

    def time(self, m, n, k, args):
        self.proc.stdin.write(json.dumps({"m": m, "n": n, "k": k, "min_reps": args.min_reps,
                                          "max_reps": args.max_reps,
                                          "target": args.target_seconds}) + "\n")
        self.proc.stdin.flush()
        result = self._read()
        # Let OpenBLAS's pool threads stop spinning before the next measurement.
        time.sleep(0.2)
        return result

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# ---------------------------------------------------------------- main

def parse_shapes(text):
    shapes = []
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        dims = [int(x) for x in part.replace("x", ",").split(",")]
        if len(dims) != 3 or min(dims) < 1:
            sys.exit(f"error: --shapes: '{part}' is not M,N,K")
        shapes.append(tuple(dims))
    return shapes


def origin_of(shape):
    for m, n, k, origin in SHAPES:
        if (m, n, k) == shape:
            return origin
    return "--shapes"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--peer-worker":
        return peer_worker(int(sys.argv[2]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 3 shapes, --target-seconds 0.2")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (1,2)")
    ap.add_argument("--shapes", help="'M,N,K;M,N,K;...' instead of the built-in list")
    ap.add_argument("--tiles", default="", help="MT,NT,KT,MR,NR: tgc's matmul-tiles option")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--check-only", action="store_true",
                    help="compile and check tgc's results only: one timed call, no peer")
    ap.add_argument("--target-seconds", type=float, default=None,
                    help="timed seconds per measurement (default 0.7, --quick 0.2)")
    ap.add_argument("--min-reps", type=int, default=3)
    ap.add_argument("--max-reps", type=int, default=1000)
    ap.add_argument("--check-macs", type=float, default=3e8,
                    help="multiply-adds of the double reference check per run; rows are "
                         "sampled above it (first 8, last 8, spaced)")
    ap.add_argument("--tgc-opt", default=os.path.join(ROOT, "build", "bin", "tgc-opt"))
    ap.add_argument("--runtime", default=os.path.join(ROOT, "build", "lib", "libtgc_runtime.a"))
    ap.add_argument("--keep", help="keep the generated files in this directory")
    args = ap.parse_args()
    if args.target_seconds is None:
        args.target_seconds = 0.2 if args.quick else 0.7
    if args.tiles and not re.fullmatch(r"\d+(,\d+){4}", args.tiles):
        sys.exit("error: --tiles wants MT,NT,KT,MR,NR")
    if args.check_only:
        args.min_reps = args.max_reps = 1
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    if args.shapes:
        shapes = parse_shapes(args.shapes)
    elif args.quick:
        shapes = QUICK_SHAPES
    else:
        shapes = [s[:3] for s in SHAPES]

    cpu = describe_cpu()
    print(f"CPU: {cpu['model']} ({cpu['cpus']} CPUs); tgc model: {cpu['vector_bits']}-bit vectors,"
          f" {cpu['vector_registers']} registers, L1d {cpu['l1_bytes'] // 1024} KiB,"
          f" L2 {cpu['l2_bytes'] // 1024} KiB" + (f"; --tiles {args.tiles}" if args.tiles else ""),
          flush=True)

    workdir = args.keep or tempfile.mkdtemp(prefix="tgc-gemm-")
    os.makedirs(workdir, exist_ok=True)
    rows, failures = [], []
    peers = {}
    try:
        try:
            tools = Toolchain(args, cpu, workdir)
        except RuntimeError:
            return 1
        for t in threads if not args.check_only else []:
            peers[t] = Peer(t)
        if peers:
            info = peers[threads[0]].info
            print(f"peer: torch {info['torch']}, OpenBLAS {info.get('config', '?')},"
                  f" core {info.get('corename', '?')}", flush=True)
        print(flush=True)
        print("| shape MxNxK | origin | threads | tgc GFLOP/s | OpenBLAS GFLOP/s "
              "| ratio (tgc/OpenBLAS) | max rel err |")
        print("|---|---|---|---|---|---|---|", flush=True)
        for (m, n, k) in shapes:
            flops = 2.0 * m * n * k
            try:
                exe, compile_s = tools.build(m, n, k)
            except RuntimeError as e:
                failures.append(f"{m}x{n}x{k}: {e} failed")
                exe, compile_s = None, {}
            for t in threads:
                row = {"m": m, "n": n, "k": k, "origin": origin_of((m, n, k)), "threads": t,
                       "compile_s": compile_s}
                ours = run_tgc(exe, m, n, k, t, args) if exe else {"error": "compilation failed"}
                peer = peers[t].time(m, n, k, args) if peers else None
                row["tgc"], row["openblas"] = ours, peer
                peer_gf = flops / peer["median_s"] / 1e9 if peer else None
                row["openblas_gflops"] = peer_gf
                peer_cell = f"{peer_gf:.1f}" if peer else "-"
                if "error" in ours:
                    failures.append(f"{m}x{n}x{k} threads={t}: {ours['error']}")
                    tgc_cell, ratio_cell = "FAILED", "-"
                    err = ours.get("max_rel_err", float("nan"))
                else:
                    gf = flops / ours["median_s"] / 1e9
                    row["tgc_gflops"] = gf
                    tgc_cell, ratio_cell = f"{gf:.1f}", "-"
                    if peer:
                        row["ratio"] = gf / peer_gf
                        ratio_cell = f"{gf / peer_gf:.2f}"
                    err = ours["max_rel_err"]
                    if ours["checked_rows"] < m:
                        row["note"] = f"checked {ours['checked_rows']} of {m} rows"
                print(f"| {m}x{n}x{k} | {row['origin']} | {t} | {tgc_cell} | {peer_cell} "
                      f"| {ratio_cell} | {err:.1e} |", flush=True)
                rows.append(row)
    finally:
        for p in peers.values():
            p.close()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print()
    summary = {}
    for t in threads:
        ratios = [r["ratio"] for r in rows if r["threads"] == t and "ratio" in r]
        if ratios:
            summary[t] = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    if summary:
        print("geometric-mean ratio (tgc/OpenBLAS, higher is better): " +
              ", ".join(f"{t} thread{'s' if t > 1 else ''}: {g:.2f}" for t, g in summary.items())
              + f" over {len(shapes)} shapes")
    print("GFLOP/s = 2*M*N*K / median seconds per call; max rel err = max |C - ref| / "
          "sum_k |A B| against a double reference (rows sampled beyond --check-macs).")
    for f in failures:
        print(f"FAILED: {f}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu, "peer": peers[threads[0]].info if peers else None,
                       "tiles": args.tiles or None, "target_seconds": args.target_seconds,
                       "min_reps": args.min_reps, "max_reps": args.max_reps,
                       "geomean_ratio": {str(t): g for t, g in summary.items()},
                       "rows": rows, "failures": failures}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
