#!/usr/bin/env python3
"""Checks the layering docs/architecture.md describes, by the includes and
options of the source tree under --root:

  - a backend includes nothing of another: lib/Target/CUDA and
    include/tgc/Target/CUDA nothing of Target/CPU, and the other way round;
  - the layers both backends share (lib/Target/Host, lib/Target/Tiling,
    lib/Target/KernelCount and their headers) include neither backend;
  - the target-neutral lowering (lib/Conversion, lib/Pipelines,
    include/tgc/Conversion) declares no pass option and defines no constant
    for a byte, tile, task or cache size: those come from a TargetBackend
    query or the backend's own passes.

Prints each violation as FILE:LINE: what, then a summary; exits 1 if any."""
import argparse
import os
import re
import sys

BACKENDS = {"CPU", "CUDA"}
SHARED = ["lib/Target/Host", "lib/Target/Tiling", "lib/Target/KernelCount",
          "include/tgc/Target/Host", "include/tgc/Target/Tiling.h",
          "include/tgc/Target/KernelCount.h"]
NEUTRAL = ["lib/Conversion", "lib/Pipelines", "include/tgc/Conversion"]
SOURCE = (".cpp", ".h", ".td", ".inc")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# A pass option (TableGen Option<"name", "flag", ...> / ListOption, or a
# C++ Option<T> name{*this, "flag", ...}) whose flag names a size.
OPTION = re.compile(r'(?:List)?Option<[^>]*>?\s*[^;]*?"([a-z0-9-]*(?:bytes|tile|task|cache)[a-z0-9-]*)"')
CONSTANT = re.compile(r'constexpr\s+(?:std::)?(?:u?int\d*_t|int|unsigned|size_t|double|float)\s+'
                      r'(k\w*(?:Bytes|Tile|Task|Cache|KiB|MiB)\w*)\s*=')


def files(root, path):
    full = os.path.join(root, path)
    if os.path.isfile(full):
        yield path
        return
    for d, _, names in os.walk(full):
        for n in sorted(names):
            if n.endswith(SOURCE):
                yield os.path.relpath(os.path.join(d, n), root)


def backend_of(path):
    parts = path.split("/")
    for i in range(len(parts) - 1):
        if parts[i] == "Target" and parts[i + 1] in BACKENDS:
            return parts[i + 1]
    return None


def included_backend(header, path):
    """The backend a quoted include names: tgc/Target/<B>/..., or a
    relative path into a sibling backend directory."""
    m = re.match(r"tgc/Target/(\w+)/", header)
    if m and m.group(1) in BACKENDS:
        return m.group(1)
    if header.startswith("../"):
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), header))
        return backend_of(resolved)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    root = args.root
    problems, checked = [], 0

    def lines(path):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            return list(enumerate(f, 1))

    for top in ["lib/Target", "include/tgc/Target"]:
        for path in files(root, top):
            owner = backend_of(path)
            shared = any(path == s or path.startswith(s + "/") for s in SHARED)
            if owner is None and not shared:
                continue
            checked += 1
            for n, line in lines(path):
                m = INCLUDE.match(line)
                if not m:
                    continue
                other = included_backend(m.group(1), path)
                if other and other != owner:
                    who = f"the {owner} backend" if owner else "a shared layer"
                    problems.append(f"{path}:{n}: {who} includes {m.group(1)} "
                                    f"(Target/{other})")
    for top in NEUTRAL:
        for path in files(root, top):
            checked += 1
            for n, line in lines(path):
                if line.lstrip().startswith("//"):
                    continue
                m = OPTION.search(line)
                if m:
                    problems.append(f"{path}:{n}: the neutral lowering declares "
                                    f"a size option '{m.group(1)}'")
                m = CONSTANT.search(line)
                if m:
                    problems.append(f"{path}:{n}: the neutral lowering defines "
                                    f"a size constant {m.group(1)}")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering violations in {checked} files")
        return 1
    print(f"{checked} files checked, layering holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
