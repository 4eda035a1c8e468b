#!/usr/bin/env python3
"""Prints 'name [shape]' (sorted, as list_safetensors.py does) for every
tensor PEFT writes in adapter_model.safetensors for a LoRA of rank --r on the
modules --targets selects, from a Hugging Face config.json alone.

Written from transformers' module structure and PEFT's rules, independently
of tgc (it reads neither tgc's output nor torch_models.py):

  - the modules, by their path in the model and their (in, out) features:
    LlamaForCausalLM: model.layers.N.self_attn.{q,k,v,o}_proj and
    model.layers.N.mlp.{gate,up,down}_proj (nn.Linear), lm_head;
    GPT2LMHeadModel: transformer.h.N.attn.c_attn, transformer.h.N.attn.c_proj,
    transformer.h.N.mlp.c_fc, transformer.h.N.mlp.c_proj (Conv1D(nf, nx):
    weight [nx, nf], so in = nx, out = nf), lm_head;
  - target_modules as a list: a module is adapted when its name equals an
    entry or ends with "." + entry (peft.tuners.tuners_utils.
    check_target_module_exists);
  - lora_A = nn.Linear(in, r), lora_B = nn.Linear(r, out), whatever the
    base layer (LoraLayer.update_layer; Conv1D reports its weight's shape as
    (in, out)), so their weights are [r, in] and [out, r];
  - saved as "base_model.model." + module + ".lora_A.weight" (the
    PeftModelForCausalLM's state dict, with the adapter name "default"
    removed by get_peft_model_state_dict).

The committed fixtures test/e2e/Inputs/peft-tinyllama-r16.txt and
test/e2e/Inputs/peft-gpt2-r8.txt are this script's output:

  peft_adapter_names.py examples/tinyllama-1.1b.json --r 16 \\
      --targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj
  peft_adapter_names.py examples/gpt2-small.json --r 8 --targets c_attn,c_proj,c_fc
"""
import argparse
import json


def llama_modules(c):
    d, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = c.get("head_dim") or d // h
    out = []
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "self_attn.q_proj", d, h * hd), (p + "self_attn.k_proj", d, kvh * hd),
                (p + "self_attn.v_proj", d, kvh * hd), (p + "self_attn.o_proj", h * hd, d),
                (p + "mlp.gate_proj", d, ff), (p + "mlp.up_proj", d, ff),
                (p + "mlp.down_proj", ff, d)]
    return out + [("lm_head", d, v)]


def gpt2_modules(c):
    d, v = c["n_embd"], c["vocab_size"]
    inner = c.get("n_inner") or 4 * d
    out = []
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        out += [(p + "attn.c_attn", d, 3 * d), (p + "attn.c_proj", d, d),
                (p + "mlp.c_fc", d, inner), (p + "mlp.c_proj", inner, d)]
    return out + [("lm_head", d, v)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--r", type=int, required=True)
    ap.add_argument("--targets", required=True, help="comma-separated target_modules")
    args = ap.parse_args()
    with open(args.config) as f:
        c = json.load(f)
    modules = {"llama": llama_modules, "gpt2": gpt2_modules}[c["model_type"]](c)
    targets = args.targets.split(",")
    lines = []
    for name, fan_in, fan_out in modules:
        if any(name == t or name.endswith("." + t) for t in targets):
            lines.append(f"base_model.model.{name}.lora_A.weight [{args.r}, {fan_in}]")
            lines.append(f"base_model.model.{name}.lora_B.weight [{fan_out}, {args.r}]")
    for line in sorted(lines):
        print(line)


if __name__ == "__main__":
    main()
