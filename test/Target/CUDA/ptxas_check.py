"""Assembles every module of a `tgc --emit=ptx` file with ptxas for the
given architecture; prints the number of modules and entries assembled, or
the first failure with ptxas's message."""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("ptx")
    p.add_argument("--ptxas", required=True)
    p.add_argument("--arch", default="sm_90")
    args = p.parse_args()
    text = open(args.ptx).read()
    modules = [m for m in re.split(r"^// gpu\.module @\S+\n", text, flags=re.M)
               if m.strip()]
    entries = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, module in enumerate(modules):
            path = os.path.join(tmp, f"m{i}.ptx")
            with open(path, "w") as f:
                f.write(module)
            r = subprocess.run([args.ptxas, f"-arch={args.arch}", path, "-o",
                                os.devnull], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL: module {i}: {r.stderr.strip()}")
                return 1
            entries += len(re.findall(r"^\.visible \.entry", module, flags=re.M))
    print(f"ptxas: {len(modules)} modules, {entries} entries assembled for {args.arch}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
