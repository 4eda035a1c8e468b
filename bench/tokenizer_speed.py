#!/usr/bin/env python3
"""Encoding speed of tgc's tokenizers against @lenml/tokenizers (the tests'
oracle, transformers.js's tokenizers under Node.js), one thread each, on the
tokenizer tests' corpus and on parts of it, interleaved.

usage: bench/tokenizer_speed.py [--tgc build/bin/tgc] [--rounds 3]
Needs the npm packages scripts/install-deps.sh installs in
test/Tokenizer/oracle. Prints MB/s (encode only: loading is not timed), then
tgc's loading time and how much loading raises its peak resident memory.
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parent.parent
oracle = root / "test" / "Tokenizer" / "oracle"
parser = argparse.ArgumentParser()
parser.add_argument("--tgc", default=str(root / "build" / "bin" / "tgc"))
parser.add_argument("--rounds", type=int, default=3)
args = parser.parse_args()
if not (oracle / "node_modules" / "@lenml" / "tokenizers").exists():
    sys.exit("bench/tokenizer_speed.py: run scripts/install-deps.sh first "
             "(npm packages in test/Tokenizer/oracle)")

work = pathlib.Path(tempfile.mkdtemp(prefix="tgc-tok-"))
corpus = work / "corpus.txt"
subprocess.run([sys.executable, str(oracle / "make_corpus.py"), str(root),
                str(corpus)], check=True)
text = corpus.read_text(encoding="utf-8")
gpl = pathlib.Path("/usr/share/common-licenses/GPL-3").read_text()
code_start = text.index("//===")
texts = {"corpus (1.2 MB)": corpus}
(work / "prose.txt").write_text((gpl + text[code_start:]) * 2)
texts["GPL + C++"] = work / "prose.txt"
(work / "mixed.txt").write_text(text[len(gpl):code_start] * 2)
texts["random multilingual"] = work / "mixed.txt"

env = dict(os.environ, OMP_NUM_THREADS="1")
def tgc_speed(tokenizer, path):
    out = subprocess.run([args.tgc, "tokenize", "--stats", tokenizer, str(path)],
                         capture_output=True, text=True, check=True, env=env)
    return float(re.search(r"\(([\d.]+) MB/s", out.stderr).group(1))

def oracle_speed(tokenizer, path):
    out = subprocess.run(["node", str(oracle / "oracle.mjs"), "time", tokenizer,
                          str(path)], capture_output=True, text=True, check=True)
    return float(out.stdout)

lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
model = re.search(r"Model name:\s*(.*)", lscpu).group(1)
print(f"CPU: {model}")
print("| tokenizer | text | tgc MB/s | @lenml/tokenizers MB/s | ratio |")
print("|---|---|---|---|---|")
for name in ["llama2", "llama3", "qwen3"]:
    tokenizer = str(oracle / "node_modules" / "@lenml" / f"tokenizer-{name}" / "models")
    for label, path in texts.items():
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(tgc_speed(tokenizer, path))
            theirs.append(oracle_speed(tokenizer, path))
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"| {name} | {label} | {a:.1f} | {b:.2f} | {a / b:.0f}x |")

empty = work / "empty.txt"
empty.write_text("")
print()
print("| tokenizer | tokenizer.json | tgc load s | peak RSS growth MiB |")
print("|---|---|---|---|")
for name in ["llama2", "llama3", "qwen3"]:
    tokenizer = oracle / "node_modules" / "@lenml" / f"tokenizer-{name}" / "models"
    seconds, mib = [], []
    for _ in range(args.rounds):
        out = subprocess.run([args.tgc, "tokenize", "--stats", str(tokenizer),
                              str(empty)], capture_output=True, text=True,
                             check=True, env=env)
        m = re.search(r"loaded in ([\d.]+) s, .* grew by ([\d.]+) MiB", out.stderr)
        seconds.append(float(m.group(1)))
        mib.append(float(m.group(2)))
    size = (tokenizer / "tokenizer.json").stat().st_size / 1e6
    print(f"| {name} | {size:.1f} MB | {statistics.median(seconds):.2f} | "
          f"{statistics.median(mib):.0f} |")
