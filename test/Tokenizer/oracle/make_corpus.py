#!/usr/bin/env python3
"""Writes the tokenizer tests' varied text (deterministic, about 1.2 MB):
the GPL-3, multilingual lines (CJK, Arabic, Cyrillic, Greek, accents, and
decomposed accents that NFC composes), emoji (ZWJ sequences, skin tones,
flags), runs of spaces, tabs and newlines, digits, and this repository's
C++ sources.

usage: make_corpus.py REPO_ROOT OUTPUT
"""
import pathlib
import random
import sys

root, output = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
rng = random.Random(20261206)
parts = []

gpl = pathlib.Path("/usr/share/common-licenses/GPL-3")
if gpl.exists():
    parts.append(gpl.read_text(encoding="utf-8"))

def word(alphabet, lo=1, hi=9):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))

cjk = [chr(c) for c in range(0x4E00, 0x9FA6)]
kana = [chr(c) for c in range(0x3041, 0x3097)] + [chr(c) for c in range(0x30A1, 0x30FB)]
hangul = [chr(c) for c in range(0xAC00, 0xD7A4)]
arabic = [chr(c) for c in range(0x0621, 0x064B)]
cyrillic = [chr(c) for c in range(0x0410, 0x0450)]
greek = [chr(c) for c in range(0x0391, 0x03CA) if c != 0x03A2]
latin = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
accented = list("àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿßÀÉÎÕÜŒœĳŁłŠšŽžİı")
combining = ["\u0301", "\u0300", "\u0308", "\u0327", "\u030A", "\u0303"]
emoji = ["😀", "🎉", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "❤️", "🤖", "🧪",
         "🏳️‍🌈", "✅", "🔥", "🙂", "🚀"]
punct = list(".,;:!?¿¡()[]{}\"'«»“”‘’—–-…/\\@#$%^&*_+=<>|~`")
spaces = [" ", "  ", "   ", "\t", "\t\t", " \t ", "\n", "\n\n", "\r\n", "    \n",
          "\u00A0", "\u3000", "\u2009"]

def mixed_line():
    pieces = []
    for _ in range(rng.randint(3, 18)):
        kind = rng.random()
        if kind < 0.12:
            pieces.append(word(cjk, 1, 6))
        elif kind < 0.18:
            pieces.append(word(kana, 1, 6))
        elif kind < 0.22:
            pieces.append(word(hangul, 1, 4))
        elif kind < 0.32:
            pieces.append(word(arabic, 2, 8))
        elif kind < 0.38:
            pieces.append(word(cyrillic, 2, 9))
        elif kind < 0.42:
            pieces.append(word(greek, 2, 9))
        elif kind < 0.55:
            w = word(latin, 1, 6) + rng.choice(accented) + word(latin, 0, 4)
            if rng.random() < 0.3:  # decomposed: NFC composes it
                w += rng.choice("aeiou") + rng.choice(combining)
            pieces.append(w)
        elif kind < 0.65:
            pieces.append("".join(rng.choice(emoji) for _ in range(rng.randint(1, 3))))
        elif kind < 0.78:
            digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 12)))
            pieces.append(rng.choice([digits, digits + ".5", "-" + digits, "1,234,567", "3.14159", "0x1F"]))
        elif kind < 0.9:
            pieces.append(word(latin, 1, 10) + rng.choice(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL"]))
        else:
            pieces.append(word(punct, 1, 4))
        pieces.append(rng.choice(spaces) if rng.random() < 0.3 else " ")
    return "".join(pieces)

while sum(len(p.encode()) for p in parts) < 700_000:
    parts.append("\n".join(mixed_line() for _ in range(50)) + "\n")

sources = sorted((root / "lib").rglob("*.cpp"))
code = []
for path in sources:
    code.append(path.read_text(encoding="utf-8"))
    if sum(len(c) for c in code) > 500_000:
        break
parts.append("".join(code))
output.write_text("".join(parts), encoding="utf-8")
