#!/usr/bin/env python3
"""Writes two small tokenizers whose encodings the lit tests state by hand:

  bytelevel/  GPT-2 style: ByteLevel pre-tokenizer (GPT-2 regex), BPE, an
              added token with lstrip, a template that appends it.
  spiece/     Llama-2 style: Prepend/Replace normalizers, no pre-tokenizer,
              byte fallback, fused unknowns, Replace/ByteFallback/Fuse/Strip
              decoders, tokenizer_config.json adding BOS.

usage: make_tiny_tokenizers.py OUTPUT_DIR
"""
import json
import os
import sys

out = sys.argv[1]


def write(name, tokenizer, config=None):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    with open(os.path.join(out, name, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    if config is not None:
        with open(os.path.join(out, name, "tokenizer_config.json"), "w") as f:
            json.dump(config, f)


def added(id, content, lstrip=False, rstrip=False, special=True):
    return {"id": id, "content": content, "single_word": False,
            "lstrip": lstrip, "rstrip": rstrip, "normalized": False,
            "special": special}


# "Ġ" is the space byte and "Ċ" the newline byte in GPT-2's alphabet.
write("bytelevel", {
    "version": "1.0",
    "added_tokens": [added(9, "<|end|>", lstrip=True)],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                      "trim_offsets": True, "use_regex": True},
    "post_processor": {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "<|end|>", "type_id": 0}}],
        "pair": [],
        "special_tokens": {"<|end|>": {"id": "<|end|>", "ids": [9],
                                       "tokens": ["<|end|>"]}}},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None,
              "continuing_subword_prefix": "", "end_of_word_suffix": "",
              "fuse_unk": False, "byte_fallback": False,
              "vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "!": 4, "ab": 5,
                        "abc": 6, "Ġa": 7, "bc": 8, "aa": 10, "Ċ": 11},
              "merges": ["a b", ["ab", "c"], "Ġ a", "b c", "a a"]},
})

vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
for b in range(256):
    vocab["<0x%02X>" % b] = len(vocab)
for token in ["▁", "a", "b", "c", "h", "i", "▁a", "▁b", "hi", "▁hi", "▁▁"]:
    vocab[token] = len(vocab)
write("spiece", {
    "version": "1.0",
    "added_tokens": [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "▁"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": None,
    "post_processor": None,
    "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
              "continuing_subword_prefix": None, "end_of_word_suffix": None,
              "fuse_unk": True, "byte_fallback": True, "vocab": vocab,
              "merges": ["▁ a", "▁ b", "h i", "▁ hi", "▁ ▁"]},
}, {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>",
    "eos_token": {"content": "</s>", "__type": "AddedToken"}})
