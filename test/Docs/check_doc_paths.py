#!/usr/bin/env python3
"""Checks that every source-tree path a Markdown file names exists.

  check_doc_paths.py --root SOURCE_ROOT FILE.md [FILE.md...]

A path is a token inside backticks (inline `code` or a fenced block) that
starts with one of the tree's top-level folders (include/, lib/, tools/,
test/, bench/, scripts/, docs/, examples/). Within a token:

  {a,b}       is expanded, each alternative checked (lib/Conversion/{A,B});
  <Name>      is a placeholder: only the folder before it must exist
              (lib/Target/<Name>/ checks lib/Target/);
  * ?         are globs: at least one file must match (docs/*.md).

A path that follows another path character (build/lib/..., /usr/lib/...)
is not one of the tree's. Prints each missing path with the file and line
that names it and exits 1 if there is any; otherwise prints how many paths
were checked.
"""
import argparse
import glob
import os
import re
import sys

ROOTS = ("include", "lib", "tools", "test", "bench", "scripts", "docs", "examples")
# A path token: a top-level folder, then path characters. Not preceded by a
# character that would make it the tail of another path or word.
PATH = re.compile(r"(?<![\w./~$%-])((?:" + "|".join(ROOTS) + r")/[\w.{},<>*?+/-]*)")
INLINE = re.compile(r"(`+)(.+?)\1")
FENCE = re.compile(r"^\s*(```|~~~)")


def spans(text):
    """(line number, code text) for every fenced line and inline code span."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            yield number, line
        else:
            for match in INLINE.finditer(line):
                yield number, match.group(2)


def expand_braces(token):
    match = re.search(r"\{([^{}]*)\}", token)
    if not match:
        return [token]
    out = []
    for alternative in match.group(1).split(","):
        out += expand_braces(token[:match.start()] + alternative + token[match.end():])
    return out


def exists(root, path):
    if "<" in path:
        # A placeholder: the folder before it must exist.
        path = path[:path.index("<")].rsplit("/", 1)[0]
    if any(c in path for c in "*?"):
        return bool(glob.glob(os.path.join(root, path)))
    return os.path.exists(os.path.join(root, path))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="the source tree's root")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    checked, missing = 0, []
    for name in args.files:
        with open(name, encoding="utf-8") as f:
            text = f.read()
        for number, code in spans(text):
            for match in PATH.finditer(code):
                # Punctuation that ends a sentence or a list is not the path's.
                token = match.group(1).rstrip(".,:;")
                for path in expand_braces(token):
                    checked += 1
                    if not exists(args.root, path.rstrip("/") or path):
                        missing.append(f"{name}:{number}: {path} does not exist")
    for line in missing:
        print(line)
    if missing:
        print(f"{len(missing)} of {checked} paths do not exist under {args.root}")
        return 1
    print(f"{checked} paths checked, all exist")
    return 0


if __name__ == "__main__":
    sys.exit(main())
