#!/usr/bin/env python3
"""Quick fuzz loop for the front end: truncated and byte-flipped copies of the
example model files must give exit code 0 (still valid) or 1 (a clear error
that names the file), never a crash, an assert or a hang."""
import os
import random
import subprocess
import sys
import tempfile


def main():
    tgc, examples_dir, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(1234)
    seeds = sorted(
        os.path.join(examples_dir, f)
        for f in os.listdir(examples_dir)
        if f.endswith(".json")
    )
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fuzzed.json")
        for i in range(iterations):
            data = bytearray(open(seeds[i % len(seeds)], "rb").read())
            kind = rng.choice(["truncate", "flip", "splice", "digits"])
            if kind == "truncate":
                data = data[: rng.randrange(len(data))]
            elif kind == "flip":
                for _ in range(rng.randint(1, 4)):
                    pos = rng.randrange(len(data))
                    data[pos] ^= 1 << rng.randrange(8)
            elif kind == "splice":
                a, b = sorted(rng.randrange(len(data)) for _ in range(2))
                data = data[:a] + data[b:]
            else:
                # Replace a digit run with a huge, zero, negative or fractional value.
                digits = [j for j, c in enumerate(data) if chr(c).isdigit()]
                if digits:
                    pos = rng.choice(digits)
                    repl = rng.choice([b"0", b"-1", b"99999999999999999999", b"1e308", b"0.5", b"4096"])
                    data = data[:pos] + repl + data[pos + 1 :]
            with open(path, "wb") as f:
                f.write(data)
            # Small shapes keep the valid cases fast.
            cmd = [tgc, path, "--emit=tg", "--batch-size=1", "-o", os.devnull]
            try:
                proc = subprocess.run(cmd, capture_output=True, timeout=30)
            except subprocess.TimeoutExpired:
                print(f"HANG on iteration {i} ({kind})")
                failures += 1
                continue
            err = proc.stderr.decode(errors="replace")
            ok = proc.returncode == 0 or (
                proc.returncode == 1 and "error:" in err and "fuzzed.json" in err
            )
            if not ok or "Assertion" in err or "Stack dump" in err:
                failures += 1
                keep = os.path.join(tmp, f"crash-{i}.json")
                print(f"FAIL iteration {i} ({kind}): rc={proc.returncode}\n{err[:2000]}")
                print(data.decode(errors="replace")[:2000])
    print(f"{iterations} fuzzed model files, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
