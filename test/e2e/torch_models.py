"""PyTorch reference implementations with Hugging Face parameter names and
semantics (LlamaForCausalLM with Mistral's, Qwen2's and Qwen3's differences,
Phi-3, Gemma, OLMo-2, GPT2LMHeadModel, GPTNeoXForCausalLM, and the mixtures
of experts Mixtral, Qwen2-MoE, Qwen3-MoE and OLMoE), plus the tgc MLP. Written out
here because transformers is not packaged for this machine; each follows the
transformers code path op for op (pre-norm, rotate_half RoPE, GQA by
repeating K/V heads, tied heads, Conv1D [in, out] weights, gelu_new).
With adapters in the parameters (NAME.lora_A.weight, NAME.lora_B.weight)
a linear or Conv1D module adds PEFT's LoRA path (`linear`, `conv1d`; every
family but Phi-3, whose fused projections take none)."""
import json
import math
import re

import torch
import torch.nn.functional as F


def load_config(path):
    with open(path) as f:
        return json.load(f)


# The MoE routers' weights (not Qwen2-MoE's shared_expert_gate).
ROUTERS = (".mlp.gate.weight", ".block_sparse_moe.gate.weight")


def init_params(names_shapes, seed, dtype, zero_centred_norms=False):
    """Random weights (normal 0.02, norms around 1) in state-dict order.
    Gemma's norms scale by (1 + weight) and store weights around 0
    (`zero_centred_norms`). MoE routers are N(0, 0.2): with HF's 0.02 the
    router logits of normalised inputs are ~0.1 apart, every routing weight
    is near 1/E (a wrong weight hardly shows) and top-k choices sit close to
    ties that f32 rounding could flip; at 0.2 the logits are of order 1."""
    g = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in names_shapes:
        if name.endswith("norm.weight") or ".ln_" in name and name.endswith(".weight") \
                or name.startswith("transformer.ln_f.weight"):
            t = (0.0 if zero_centred_norms else 1.0) + \
                0.1 * torch.randn(shape, generator=g, dtype=torch.float64)
        elif name.endswith(".bias"):
            t = 0.02 * torch.randn(shape, generator=g, dtype=torch.float64)
        elif name.endswith(ROUTERS):
            t = 0.2 * torch.randn(shape, generator=g, dtype=torch.float64)
        else:
            t = 0.02 * torch.randn(shape, generator=g, dtype=torch.float64)
        params[name] = t.to(dtype).requires_grad_(True)
    return params


# ----------------------------------------------------------------------------
# LoRA (PEFT's peft.tuners.lora)
# ----------------------------------------------------------------------------

def pattern_key(keys, module):
    """peft.utils.other.get_pattern_key: the first key of rank_pattern or
    alpha_pattern, in the dict's order, with re.match(rf"(.*\.)?({key})$",
    module); None when no key matches."""
    for key in keys:
        if re.match(rf"(.*\.)?({key})$", module):
            return key
    return None


def lora_rank_alpha(c, module):
    """LoraModel._create_and_replace: the module's r and lora_alpha, from
    rank_pattern / alpha_pattern where a key matches it."""
    lora = c["training"]["lora"]
    ranks, alphas = lora.get("rank_pattern") or {}, lora.get("alpha_pattern") or {}
    rk, ak = pattern_key(ranks, module), pattern_key(alphas, module)
    return (ranks[rk] if rk is not None else lora["r"],
            alphas[ak] if ak is not None else lora.get("lora_alpha", 8))


def lora_scaling(c, module=""):
    """LoraLayer.update_layer: lora_alpha / r, or lora_alpha / sqrt(r) with
    use_rslora, of the module's r and alpha. `c["training"]["lora"]` holds
    LoraConfig's keys."""
    r, alpha = lora_rank_alpha(c, module)
    return alpha / (math.sqrt(r) if c["training"]["lora"].get("use_rslora") else r)


def lora_path(c, P, module, x):
    """lora_B(lora_A(x)) * scaling (lora.Linear.forward, dropout 0), or None
    when `module` has no adapters. lora_A and lora_B are nn.Linear layers
    whatever the base layer, GPT-2's Conv1D included (fan_in_fan_out only
    transposes the merged delta)."""
    a = P.get(module + ".lora_A.weight")
    if a is None:
        return None
    return F.linear(F.linear(x, a), P[module + ".lora_B.weight"]) * lora_scaling(c, module)


def adapter_names(module):
    """The adapters' names of `module`: lora.Embedding keeps its own
    parameters (lora_embedding_A [r, V], lora_embedding_B [D, r]),
    lora.Linear two Linear layers (lora_A.weight, lora_B.weight)."""
    if module in EMBEDDINGS:
        return module + ".lora_embedding_A", module + ".lora_embedding_B"
    return module + ".lora_A.weight", module + ".lora_B.weight"


def embedding(c, P, module, ids):
    """nn.Embedding `module`, plus PEFT's lora.Embedding path if it has
    adapters: F.embedding(ids, Aᵀ) @ Bᵀ · scaling."""
    x = F.embedding(ids.long(), P[module + ".weight"])
    a = P.get(module + ".lora_embedding_A")
    if a is None:
        return x
    return x + (F.embedding(ids.long(), a.t()) @ P[module + ".lora_embedding_B"].t()) \
        * lora_scaling(c, module)


def linear(c, P, module, x):
    """nn.Linear `module` (weight [out, in], bias if P has one), plus its
    LoRA path if it has adapters: result = base_layer(x) + lora path."""
    y = F.linear(x, P[module + ".weight"], P.get(module + ".bias"))
    d = lora_path(c, P, module, x)
    return y if d is None else y + d


def conv1d(c, P, module, x):
    """GPT-2's Conv1D `module` (x @ W + b, W [in, out]), plus its LoRA path."""
    y = x @ P[module + ".weight"] + P[module + ".bias"]
    d = lora_path(c, P, module, x)
    return y if d is None else y + d


# The embeddings: modules whose weight is a table, not a product's.
EMBEDDINGS = {"model.embed_tokens", "transformer.wte", "transformer.wpe", "gpt_neox.embed_in"}
# The output layer PEFT's all-linear leaves out (get_output_embeddings()).
OUTPUT_LAYERS = {"lm_head", "embed_out"}


def linear_modules(c, names_shapes):
    """(module, in_features, out_features) of every nn.Linear or Conv1D of
    the model: the 2-D weights that are not embedding tables. GPT-2's Conv1D
    stores [in, out], nn.Linear [out, in]."""
    out = []
    for name, shape in names_shapes:
        module = name[:-len(".weight")]
        if not name.endswith(".weight") or len(shape) != 2 or module in EMBEDDINGS:
            continue
        fan_in_fan_out = c["model_type"] == "gpt2"
        out.append((module, shape[0] if fan_in_fan_out else shape[1],
                    shape[1] if fan_in_fan_out else shape[0]))
    return out


def lora_layer_index(module, layers_pattern):
    """check_target_module_exists's layer index (PEFT >= 0.20's lazy
    regexes): the number after one of layers_pattern, or without one the
    first numeric component with two components before it."""
    patterns = [layers_pattern] if isinstance(layers_pattern, str) else layers_pattern
    if not patterns:
        m = re.match(r".*?\.[^.]*\.(\d+)\.", module)
    else:
        m = None
        for pattern in patterns:
            m = re.match(rf".*?\.{pattern}\.(\d+)\.", module)
            if m:
                break
    return int(m.group(1)) if m else None


def lora_selects(lora, module):
    """check_target_module_exists for one module name: exclude_modules first
    (a string: re.fullmatch; a list: exact or "." suffix), then a string
    target_modules by re.fullmatch, a list by exact name, or by suffix
    restricted to layers_to_transform."""
    exclude = lora.get("exclude_modules")
    if exclude:
        if isinstance(exclude, str):
            if re.fullmatch(exclude, module):
                return False
        elif module in exclude or any(module.endswith("." + e) for e in exclude):
            return False
    targets = lora["target_modules"]
    if isinstance(targets, str):
        return re.fullmatch(targets, module) is not None
    if module in targets:
        return True
    if not any(module.endswith("." + t) for t in targets):
        return False
    layers = lora.get("layers_to_transform")
    if layers is None or layers == []:
        return True
    index = lora_layer_index(module, lora.get("layers_pattern"))
    if index is None:
        return False
    return index == layers if isinstance(layers, int) else index in layers


def lora_targets(c, names_shapes, targets=None):
    """The modules PEFT adapts, (module, in, out): c["training"]["lora"]'s
    target_modules (or `targets`), with exclude_modules and
    layers_to_transform (lora_selects); "all-linear" first becomes the last
    name component of every linear module but the output layer
    (_maybe_include_all_linear_layers), and takes no embedding. An
    embedding's "in" is its vocabulary, its "out" its width."""
    lora = dict(c["training"]["lora"])
    if targets is not None:
        lora["target_modules"] = targets
    modules = linear_modules(c, names_shapes)
    all_linear = lora["target_modules"] == "all-linear" or \
        (isinstance(lora["target_modules"], list) and "all-linear" in lora["target_modules"])
    if all_linear:
        lora["target_modules"] = {m.rsplit(".", 1)[-1] for m, _, _ in modules
                                  if m not in OUTPUT_LAYERS}
    selected = [(m, i, o) for m, i, o in modules if lora_selects(lora, m)]
    if not all_linear:
        selected += [(name[:-len(".weight")], shape[0], shape[1])
                     for name, shape in names_shapes
                     if name[:-len(".weight")] in EMBEDDINGS
                     and lora_selects(lora, name[:-len(".weight")])]
    return selected


# ----------------------------------------------------------------------------
# Llama / Mistral
# ----------------------------------------------------------------------------

def head_dim(c):
    default = 128 if c["model_type"] == "qwen3" else c["hidden_size"] // c["num_attention_heads"]
    return c.get("head_dim") or default


def attention_biases(c):
    """(q/k/v bias, o_proj bias): Qwen2 biases q/k/v only (Qwen2Attention),
    Qwen2-MoE too unless qkv_bias is false, Mistral and Mixtral none
    (MistralAttention reads no attention_bias)."""
    if c["model_type"] == "qwen2":
        return True, False
    if c["model_type"] == "qwen2_moe":
        return c.get("qkv_bias", True), False
    if c["model_type"] in ("mistral", "mixtral"):
        return False, False
    b = c.get("attention_bias", False)
    return b, b


def tied(c):
    """Whether lm_head is the embedding: the Gemma configs tie by default."""
    return c.get("tie_word_embeddings", c["model_type"].startswith("gemma"))


def attention_shapes(p, d, h, kvh, hd, bias):
    """q/k/v/o_proj of layer prefix `p`, each with a bias if `bias`."""
    out = []
    for name, shape in (("q_proj", (h * hd, d)), ("k_proj", (kvh * hd, d)),
                        ("v_proj", (kvh * hd, d)), ("o_proj", (d, h * hd))):
        out.append((p + "self_attn." + name + ".weight", shape))
        if bias:
            out.append((p + "self_attn." + name + ".bias", (shape[0],)))
    return out


def final_shapes(c):
    """The final norm and, unless tied, the head of a llama-like model."""
    d, v = c["hidden_size"], c["vocab_size"]
    out = [("model.norm.weight", (d,))]
    if not tied(c):
        out.append(("lm_head.weight", (v, d)))
    return out


def lm_loss(c, P, x, targets):
    """Cross-entropy of the head's logits of the final hidden states `x`."""
    logits = F.linear(x, P["model.embed_tokens.weight"]) if tied(c) \
        else linear(c, P, "lm_head", x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long(),
                           ignore_index=-100)


def llama_shapes(c):
    d, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = head_dim(c)
    qkv_bias, o_bias = attention_biases(c)
    mlp_bias = c.get("mlp_bias", False) and c["model_type"] == "llama"
    out = [("model.embed_tokens.weight", (v, d))]

    def proj(name, shape, bias):
        items = [(name + ".weight", shape)]
        if bias:
            items.append((name + ".bias", (shape[0],)))
        return items
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += proj(p + "self_attn.q_proj", (h * hd, d), qkv_bias)
        out += proj(p + "self_attn.k_proj", (kvh * hd, d), qkv_bias)
        out += proj(p + "self_attn.v_proj", (kvh * hd, d), qkv_bias)
        out += proj(p + "self_attn.o_proj", (d, h * hd), o_bias)
        if c["model_type"] == "qwen3":
            out += [(p + "self_attn.q_norm.weight", (hd,)),
                    (p + "self_attn.k_norm.weight", (hd,))]
        out += proj(p + "mlp.gate_proj", (ff, d), mlp_bias)
        out += proj(p + "mlp.up_proj", (ff, d), mlp_bias)
        out += proj(p + "mlp.down_proj", (d, ff), mlp_bias)
        out += [(p + "input_layernorm.weight", (d,)),
                (p + "post_attention_layernorm.weight", (d,))]
    return out + final_shapes(c)


def rms_norm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_settings(c):
    """(theta, scaling object or None) from rope_scaling / rope_parameters."""
    params = c.get("rope_parameters") or {}
    theta = params.get("rope_theta", c.get("rope_theta", 10000.0))
    scaling = c.get("rope_scaling") or params
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    return theta, (None if kind == "default" else dict(scaling, kind=kind))


def rope_inv_freq(dim, theta, scaling):
    """transformers' ROPE_INIT_FUNCTIONS: default, linear and llama3."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    if scaling is None:
        return inv_freq
    factor = scaling["factor"]
    if scaling["kind"] == "linear":
        return inv_freq / factor
    assert scaling["kind"] == "llama3", scaling
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_len = scaling["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old_len / low, old_len / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)


def rope_cos_sin(seq, dim, theta, dtype, scaling=None):
    inv_freq = rope_inv_freq(dim, theta, scaling)
    t = torch.arange(seq, dtype=torch.float64)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_rope(t, cos, sin):
    """rotate_half RoPE over the first cos.shape[-1] dimensions of each head
    (all of them, or a partial rotary share); the rest pass through."""
    rot = cos.shape[-1]
    r, rest = t[..., :rot], t[..., rot:]
    return torch.cat((r * cos + rotate_half(r) * sin, rest), dim=-1)


def causal_attention(q, k, v, scale=None, window=None, softcap=None):
    """q [B,H,S,D], k/v [B,Hkv,S,D] (repeated to H heads), causal; with a
    window W query i sees keys i - W < j <= i (transformers'
    sliding_window_causal mask); with a softcap c the scores are
    c * tanh(s / c) before the mask (Gemma 2's eager attention)."""
    groups = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(groups, dim=1)
    v = v.repeat_interleave(groups, dim=1)
    scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if softcap is not None:
        s = torch.tanh(s / softcap) * softcap
    seq = q.shape[2]
    i = torch.arange(seq).view(-1, 1)
    j = torch.arange(seq).view(1, -1)
    hidden = j > i
    if window is not None:
        hidden = hidden | (j <= i - window)
    s = s.masked_fill(hidden, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v)


def layer_windows(c):
    """Each layer's sliding window (None: full causal), as transformers'
    Mistral, Qwen2 and Qwen3 configs decide it."""
    n = c["num_hidden_layers"]
    w = c.get("sliding_window")
    if c["model_type"] == "mistral":
        return [w] * n
    if c["model_type"] in ("qwen2", "qwen3") and c.get("use_sliding_window") and w:
        types = c.get("layer_types") or [
            "sliding_attention" if i >= c.get("max_window_layers", 28)
            else "full_attention" for i in range(n)]
        return [w if t == "sliding_attention" else None for t in types]
    return [None] * n


def llama_loss(c, P, ids, targets):
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = head_dim(c)
    eps = c.get("rms_norm_eps", 1e-6)
    B, S = ids.shape
    x = embedding(c, P, "model.embed_tokens", ids)
    theta, scaling = rope_settings(c)
    cos, sin = rope_cos_sin(S, hd, theta, x.dtype, scaling)
    act = {"silu": F.silu, "gelu": F.gelu,
           "gelu_pytorch_tanh": lambda t: F.gelu(t, approximate="tanh"),
           "relu": F.relu}[c.get("hidden_act", "silu")]
    windows = layer_windows(c)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        n = rms_norm(x, P[p + "input_layernorm.weight"], eps)
        def lin(t, name):
            return linear(c, P, p + name, t)
        q = lin(n, "self_attn.q_proj").view(B, S, h, hd)
        k = lin(n, "self_attn.k_proj").view(B, S, kvh, hd)
        v = lin(n, "self_attn.v_proj").view(B, S, kvh, hd).transpose(1, 2)
        if c["model_type"] == "qwen3":  # Qwen3Attention: per-head RMSNorm
            q = rms_norm(q, P[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, P[p + "self_attn.k_norm.weight"], eps)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = causal_attention(q, k, v, window=windows[i]).transpose(1, 2).reshape(B, S, h * hd)
        x = x + lin(a, "self_attn.o_proj")
        n = rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
        m = act(lin(n, "mlp.gate_proj")) * lin(n, "mlp.up_proj")
        x = x + lin(m, "mlp.down_proj")
    return lm_loss(c, P, rms_norm(x, P["model.norm.weight"], eps), targets)


# ----------------------------------------------------------------------------
# GPT-2
# ----------------------------------------------------------------------------

def gpt2_shapes(c):
    d, v = c["n_embd"], c["vocab_size"]
    ff = c.get("n_inner") or 4 * d
    out = [("transformer.wte.weight", (v, d)), ("transformer.wpe.weight", (c["n_positions"], d))]
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        out += [(p + "ln_1.weight", (d,)), (p + "ln_1.bias", (d,)),
                (p + "attn.c_attn.weight", (d, 3 * d)), (p + "attn.c_attn.bias", (3 * d,)),
                (p + "attn.c_proj.weight", (d, d)), (p + "attn.c_proj.bias", (d,)),
                (p + "ln_2.weight", (d,)), (p + "ln_2.bias", (d,)),
                (p + "mlp.c_fc.weight", (d, ff)), (p + "mlp.c_fc.bias", (ff,)),
                (p + "mlp.c_proj.weight", (ff, d)), (p + "mlp.c_proj.bias", (d,))]
    out += [("transformer.ln_f.weight", (d,)), ("transformer.ln_f.bias", (d,))]
    return out


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def gpt2_loss(c, P, ids, targets):
    d, h = c["n_embd"], c["n_head"]
    hd = d // h
    eps = c.get("layer_norm_epsilon", 1e-5)
    B, S = ids.shape
    act = {"gelu_new": gelu_new, "gelu": F.gelu, "relu": F.relu}[c.get("activation_function", "gelu_new")]
    x = embedding(c, P, "transformer.wte", ids) + \
        embedding(c, P, "transformer.wpe", torch.arange(S))
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        n = F.layer_norm(x, (d,), P[p + "ln_1.weight"], P[p + "ln_1.bias"], eps)
        qkv = conv1d(c, P, p + "attn.c_attn", n)
        q, k, v = qkv.split(d, dim=2)
        q, k, v = (t.view(B, S, h, hd).transpose(1, 2) for t in (q, k, v))
        a = causal_attention(q, k, v).transpose(1, 2).reshape(B, S, d)
        x = x + conv1d(c, P, p + "attn.c_proj", a)
        n = F.layer_norm(x, (d,), P[p + "ln_2.weight"], P[p + "ln_2.bias"], eps)
        f = act(conv1d(c, P, p + "mlp.c_fc", n))
        x = x + conv1d(c, P, p + "mlp.c_proj", f)
    x = F.layer_norm(x, (d,), P["transformer.ln_f.weight"], P["transformer.ln_f.bias"], eps)
    logits = F.linear(x, P["transformer.wte.weight"])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long(),
                           ignore_index=-100)


# ----------------------------------------------------------------------------
# MLP
# ----------------------------------------------------------------------------

def mlp_shapes(c):
    sizes, bias = c["layers"], c.get("bias", True)
    out = []
    for i in range(len(sizes) - 1):
        out.append((f"layers.{i}.weight", (sizes[i + 1], sizes[i])))
        if bias:
            out.append((f"layers.{i}.bias", (sizes[i + 1],)))
    return out


def mlp_loss(c, P, features, labels):
    act = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}[c.get("activation", "relu")]
    x = features
    n = len(c["layers"]) - 1
    for i in range(n):
        x = linear(c, P, f"layers.{i}", x)
        if i + 1 < n:
            x = act(x)
    return F.cross_entropy(x, labels.long())


def phi3_shapes(c):
    """Phi-3's state dict: fused qkv_proj (q rows, then k, then v) and
    gate_up_proj (gate rows, then up), no biases."""
    d, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = head_dim(c)
    out = [("model.embed_tokens.weight", (v, d))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "self_attn.qkv_proj.weight", ((h + 2 * kvh) * hd, d)),
                (p + "self_attn.o_proj.weight", (d, h * hd)),
                (p + "mlp.gate_up_proj.weight", (2 * ff, d)),
                (p + "mlp.down_proj.weight", (d, ff)),
                (p + "input_layernorm.weight", (d,)),
                (p + "post_attention_layernorm.weight", (d,))]
    return out + final_shapes(c)


def phi3_loss(c, P, ids, targets):
    """Phi3ForCausalLM (transformers' modeling_phi3): Phi3Attention splits
    qkv_proj's output, Phi3MLP chunks gate_up_proj's in two (up * act(gate));
    every layer attends within sliding_window."""
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = head_dim(c)
    eps = c.get("rms_norm_eps", 1e-5)
    window = c.get("sliding_window")
    B, S = ids.shape
    x = embedding(c, P, "model.embed_tokens", ids)
    theta, scaling = rope_settings(c)
    part = c.get("partial_rotary_factor", (c.get("rope_parameters") or {}).get(
        "partial_rotary_factor", 1.0))
    cos, sin = rope_cos_sin(S, int(hd * part), theta, x.dtype, scaling)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        n = rms_norm(x, P[p + "input_layernorm.weight"], eps)
        qkv = F.linear(n, P[p + "self_attn.qkv_proj.weight"])
        q = qkv[..., :h * hd].view(B, S, h, hd).transpose(1, 2)
        k = qkv[..., h * hd:(h + kvh) * hd].view(B, S, kvh, hd).transpose(1, 2)
        v = qkv[..., (h + kvh) * hd:].view(B, S, kvh, hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        a = causal_attention(q, k, v, window=window).transpose(1, 2).reshape(B, S, h * hd)
        x = x + F.linear(a, P[p + "self_attn.o_proj.weight"])
        n = rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
        gate, up = F.linear(n, P[p + "mlp.gate_up_proj.weight"]).chunk(2, dim=-1)
        x = x + F.linear(up * F.silu(gate), P[p + "mlp.down_proj.weight"])
    return lm_loss(c, P, rms_norm(x, P["model.norm.weight"], eps), targets)


def gemma_shapes(c):
    """GemmaForCausalLM's state dict: Llama's names, q/k/v/o biases with
    attention_bias, the head tied to the embedding unless untied."""
    d, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = c.get("head_dim") or 256
    bias = c.get("attention_bias", False)
    out = [("model.embed_tokens.weight", (v, d))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += attention_shapes(p, d, h, kvh, hd, bias)
        out += [(p + "mlp.gate_proj.weight", (ff, d)), (p + "mlp.up_proj.weight", (ff, d)),
                (p + "mlp.down_proj.weight", (d, ff)),
                (p + "input_layernorm.weight", (d,)),
                (p + "post_attention_layernorm.weight", (d,))]
    return out + final_shapes(c)


def gemma_activation(c):
    """The Gemma MLPs' hidden_activation (gelu_pytorch_tanh when absent or
    null; hidden_act is not read)."""
    return {"gelu_pytorch_tanh": lambda t: F.gelu(t, approximate="tanh"),
            "gelu": F.gelu}[c.get("hidden_activation") or "gelu_pytorch_tanh"]


def gemma_embedding(c, P, ids):
    """The Gemmas' embeddings times sqrt(hidden_size), in their dtype."""
    x = embedding(c, P, "model.embed_tokens", ids)
    return x * torch.tensor(c["hidden_size"] ** 0.5, dtype=x.dtype)


def gemma_loss(c, P, ids, targets):
    """transformers' modeling_gemma: embeddings times sqrt(hidden_size) (in
    the activations' dtype), GemmaRMSNorm scaling by (1 + weight), GemmaMLP
    with hidden_activation (gelu_pytorch_tanh by default)."""
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = c.get("head_dim") or 256
    eps = c.get("rms_norm_eps", 1e-6)
    act = gemma_activation(c)
    B, S = ids.shape
    x = gemma_embedding(c, P, ids)
    theta, scaling = rope_settings(c)
    cos, sin = rope_cos_sin(S, hd, theta, x.dtype, scaling)

    def norm(t, w):
        return rms_norm(t, 1.0 + w, eps)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."

        def lin(t, name):
            return linear(c, P, p + name, t)
        n = norm(x, P[p + "input_layernorm.weight"])
        q = lin(n, "self_attn.q_proj").view(B, S, h, hd).transpose(1, 2)
        k = lin(n, "self_attn.k_proj").view(B, S, kvh, hd).transpose(1, 2)
        v = lin(n, "self_attn.v_proj").view(B, S, kvh, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = causal_attention(q, k, v).transpose(1, 2).reshape(B, S, h * hd)
        x = x + lin(a, "self_attn.o_proj")
        n = norm(x, P[p + "post_attention_layernorm.weight"])
        x = x + lin(act(lin(n, "mlp.gate_proj")) * lin(n, "mlp.up_proj"), "mlp.down_proj")
    return lm_loss(c, P, norm(x, P["model.norm.weight"]), targets)


def gemma2_shapes(c):
    """Gemma2ForCausalLM's and Gemma3ForCausalLM's state dicts: Gemma's, four
    norms per layer, Gemma 3's q_norm/k_norm [head_dim]."""
    d, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = c.get("head_dim") or 256
    out = [("model.embed_tokens.weight", (v, d))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += attention_shapes(p, d, h, kvh, hd, c.get("attention_bias", False))
        if c["model_type"] == "gemma3_text":
            out += [(p + "self_attn.q_norm.weight", (hd,)), (p + "self_attn.k_norm.weight", (hd,))]
        out += [(p + "mlp.gate_proj.weight", (ff, d)), (p + "mlp.up_proj.weight", (ff, d)),
                (p + "mlp.down_proj.weight", (d, ff))]
        out += [(p + n + ".weight", (d,)) for n in (
            "input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
            "post_feedforward_layernorm")]
    return out + final_shapes(c)


def gemma_sliding_layers(c):
    """Which layers attend within sliding_window: layer_types, or every
    layer but each pattern-th (Gemma 2: 2, Gemma 3: sliding_window_pattern)."""
    if c.get("layer_types"):
        return [t == "sliding_attention" for t in c["layer_types"]]
    pattern = 2 if c["model_type"] == "gemma2" else c.get("sliding_window_pattern", 6)
    return [bool((i + 1) % pattern) for i in range(c["num_hidden_layers"])]


def gemma2_loss(c, P, ids, targets):
    """transformers' modeling_gemma2 and modeling_gemma3 (text): Gemma's
    embedding scale and (1 + w) norms, norms before and after each block,
    scores scaled by query_pre_attn_scalar^-1/2 and soft-capped
    (attn_logit_softcapping), sliding and global layers, soft-capped logits
    (final_logit_softcapping); Gemma 3 normalises q and k per head and uses
    rope_local_base_freq (unscaled) on its sliding layers."""
    g3 = c["model_type"] == "gemma3_text"
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = c.get("head_dim") or 256
    eps = c.get("rms_norm_eps", 1e-6)
    scale = c.get("query_pre_attn_scalar", 256) ** -0.5
    attn_cap = c.get("attn_logit_softcapping", None if g3 else 50.0)
    final_cap = c.get("final_logit_softcapping", None if g3 else 30.0)
    window = c.get("sliding_window", 4096)
    sliding = gemma_sliding_layers(c)
    act = gemma_activation(c)
    B, S = ids.shape
    x = gemma_embedding(c, P, ids)
    _, scaling = rope_settings(c)
    theta = c.get("rope_theta", 1e6 if g3 else 10000.0)
    rope_global = rope_cos_sin(S, hd, theta, x.dtype, scaling)
    rope_local = rope_cos_sin(S, hd, c.get("rope_local_base_freq", 10000.0), x.dtype) \
        if g3 else rope_global

    def norm(t, w):
        return rms_norm(t, 1.0 + w, eps)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."

        def lin(t, name):
            return linear(c, P, p + name, t)
        n = norm(x, P[p + "input_layernorm.weight"])
        q = lin(n, "self_attn.q_proj").view(B, S, h, hd)
        k = lin(n, "self_attn.k_proj").view(B, S, kvh, hd)
        v = lin(n, "self_attn.v_proj").view(B, S, kvh, hd).transpose(1, 2)
        if g3:
            q = norm(q, P[p + "self_attn.q_norm.weight"])
            k = norm(k, P[p + "self_attn.k_norm.weight"])
        cos, sin = rope_local if sliding[i] else rope_global
        q = apply_rope(q.transpose(1, 2), cos, sin)
        k = apply_rope(k.transpose(1, 2), cos, sin)
        a = causal_attention(q, k, v, scale=scale, window=window if sliding[i] else None,
                             softcap=attn_cap).transpose(1, 2).reshape(B, S, h * hd)
        x = x + norm(lin(a, "self_attn.o_proj"), P[p + "post_attention_layernorm.weight"])
        n = norm(x, P[p + "pre_feedforward_layernorm.weight"])
        m = lin(act(lin(n, "mlp.gate_proj")) * lin(n, "mlp.up_proj"), "mlp.down_proj")
        x = x + norm(m, P[p + "post_feedforward_layernorm.weight"])
    x = norm(x, P["model.norm.weight"])
    head = P["model.embed_tokens.weight"] if tied(c) else P["lm_head.weight"]
    logits = F.linear(x, head)
    if final_cap is not None:
        logits = torch.tanh(logits / final_cap) * final_cap
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long(),
                           ignore_index=-100)


def olmo2_shapes(c):
    """Olmo2ForCausalLM's state dict: q_norm/k_norm over whole projections,
    post_attention_layernorm and post_feedforward_layernorm, no input norms."""
    d, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = head_dim(c)
    bias = c.get("attention_bias", False)
    out = [("model.embed_tokens.weight", (v, d))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += attention_shapes(p, d, h, kvh, hd, bias)
        out += [(p + "self_attn.q_norm.weight", (h * hd,)),
                (p + "self_attn.k_norm.weight", (kvh * hd,)),
                (p + "mlp.gate_proj.weight", (ff, d)), (p + "mlp.up_proj.weight", (ff, d)),
                (p + "mlp.down_proj.weight", (d, ff)),
                (p + "post_attention_layernorm.weight", (d,)),
                (p + "post_feedforward_layernorm.weight", (d,))]
    return out + final_shapes(c)


def olmo2_loss(c, P, ids, targets):
    """transformers' modeling_olmo2: Olmo2Attention normalises the whole q and
    k projections before splitting heads; Olmo2DecoderLayer adds the
    normalised output of each block to the residual stream."""
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = head_dim(c)
    eps = c.get("rms_norm_eps", 1e-6)
    B, S = ids.shape
    x = embedding(c, P, "model.embed_tokens", ids)
    theta, scaling = rope_settings(c)
    cos, sin = rope_cos_sin(S, hd, theta, x.dtype, scaling)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."

        def lin(t, name):
            return linear(c, P, p + name, t)
        q = rms_norm(lin(x, "self_attn.q_proj"), P[p + "self_attn.q_norm.weight"], eps)
        k = rms_norm(lin(x, "self_attn.k_proj"), P[p + "self_attn.k_norm.weight"], eps)
        q = q.view(B, S, h, hd).transpose(1, 2)
        k = k.view(B, S, kvh, hd).transpose(1, 2)
        v = lin(x, "self_attn.v_proj").view(B, S, kvh, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = causal_attention(q, k, v).transpose(1, 2).reshape(B, S, h * hd)
        x = x + rms_norm(lin(a, "self_attn.o_proj"), P[p + "post_attention_layernorm.weight"], eps)
        m = lin(F.silu(lin(x, "mlp.gate_proj")) * lin(x, "mlp.up_proj"), "mlp.down_proj")
        x = x + rms_norm(m, P[p + "post_feedforward_layernorm.weight"], eps)
    return lm_loss(c, P, rms_norm(x, P["model.norm.weight"], eps), targets)


def neox_shapes(c):
    """GPTNeoXForCausalLM's state dict: LayerNorms with bias, query_key_value
    and dense (biased with attention_bias), the MLP's dense_h_to_4h and
    dense_4h_to_h, embed_out unless tied."""
    d, ff, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    bias = c.get("attention_bias", True)
    out = [("gpt_neox.embed_in.weight", (v, d))]
    for i in range(c["num_hidden_layers"]):
        p = f"gpt_neox.layers.{i}."
        for norm in ("input_layernorm", "post_attention_layernorm"):
            out += [(p + norm + ".weight", (d,)), (p + norm + ".bias", (d,))]
        for name, shape, b in (("attention.query_key_value", (3 * d, d), bias),
                               ("attention.dense", (d, d), bias),
                               ("mlp.dense_h_to_4h", (ff, d), True),
                               ("mlp.dense_4h_to_h", (d, ff), True)):
            out.append((p + name + ".weight", shape))
            if b:
                out.append((p + name + ".bias", (shape[0],)))
    out += [("gpt_neox.final_layer_norm.weight", (d,)), ("gpt_neox.final_layer_norm.bias", (d,))]
    if not c.get("tie_word_embeddings", False):
        out.append(("embed_out.weight", (v, d)))
    return out


def neox_loss(c, P, ids, targets):
    """transformers' modeling_gpt_neox: query_key_value viewed as [heads,
    3 * head_dim] (q, k, v per head), RoPE over the first rotary_pct of each
    head (rotate_half within those), exact GELU, and with
    use_parallel_residual x + attn(ln1(x)) + mlp(ln2(x))."""
    d, h = c["hidden_size"], c["num_attention_heads"]
    hd = d // h
    eps = c.get("layer_norm_eps", 1e-5)
    params = c.get("rope_parameters") or {}
    rot = int(hd * c.get("rotary_pct", params.get("partial_rotary_factor", 0.25)))
    theta = c.get("rotary_emb_base", params.get("rope_theta", 10000.0))
    scaling = c.get("rope_scaling") or params
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    scaling = None if kind == "default" else dict(scaling, kind=kind)
    act = {"gelu": F.gelu, "gelu_new": gelu_new}[c.get("hidden_act", "gelu")]
    B, S = ids.shape
    x = embedding(c, P, "gpt_neox.embed_in", ids)
    cos, sin = rope_cos_sin(S, rot, theta, x.dtype, scaling)
    for i in range(c["num_hidden_layers"]):
        p = f"gpt_neox.layers.{i}."

        def lin(t, name):
            return linear(c, P, p + name, t)

        def ln(t, name):
            return F.layer_norm(t, (d,), P[p + name + ".weight"], P[p + name + ".bias"], eps)
        qkv = lin(ln(x, "input_layernorm"), "attention.query_key_value").view(B, S, h, 3 * hd)
        q, k, v = (qkv[..., j * hd:(j + 1) * hd].transpose(1, 2) for j in range(3))
        a = causal_attention(apply_rope(q, cos, sin), apply_rope(k, cos, sin), v).transpose(1, 2).reshape(B, S, d)
        a = lin(a, "attention.dense")

        def mlp(t):
            return lin(act(lin(t, "mlp.dense_h_to_4h")), "mlp.dense_4h_to_h")
        if c.get("use_parallel_residual", True):
            x = mlp(ln(x, "post_attention_layernorm")) + a + x
        else:
            x = a + x
            x = mlp(ln(x, "post_attention_layernorm")) + x
    x = F.layer_norm(x, (d,), P["gpt_neox.final_layer_norm.weight"],
                     P["gpt_neox.final_layer_norm.bias"], eps)
    head = P["gpt_neox.embed_in.weight"] if c.get("tie_word_embeddings", False) \
        else P["embed_out.weight"]
    logits = F.linear(x, head)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1).long(),
                           ignore_index=-100)


# ----------------------------------------------------------------------------
# Mixtures of experts: Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE
# ----------------------------------------------------------------------------
# transformers' modeling files as the released checkpoints were written for
# (per-expert modules; transformers 5 stores experts fused, gate_up_proj).

MOE_FAMILIES = ("mixtral", "qwen2_moe", "qwen3_moe", "olmoe")


def moe_config(c):
    """The MoE block of a config with transformers' defaults: `experts`,
    `top_k`, whether the k weights are renormalised, the experts' width, the
    shared expert's width (Qwen2-MoE; 0: none), the block's module, its
    experts' projections by role (gate, up, down) and in HF's module order,
    and router_aux_loss_coef. Mixtral always renormalises (no
    norm_topk_prob); the others read norm_topk_prob (false by default)."""
    t = c["model_type"]
    if t == "mixtral":
        return {"experts": c.get("num_local_experts", 8), "top_k": c.get("num_experts_per_tok", 2),
                "renormalise": True, "width": c.get("intermediate_size", 14336), "shared": 0,
                "block": "block_sparse_moe", "roles": ("w1", "w3", "w2"),
                "order": ("w1", "w2", "w3"), "coef": c.get("router_aux_loss_coef", 0.001)}
    defaults = {"qwen2_moe": (60, 4, 0.001), "qwen3_moe": (128, 8, 0.001),
                "olmoe": (64, 8, 0.01)}[t]
    width = c.get("intermediate_size", 2048) if t == "olmoe" else \
        c.get("moe_intermediate_size", {"qwen2_moe": 1408, "qwen3_moe": 768}[t])
    shared = c.get("shared_expert_intermediate_size", 5632) if t == "qwen2_moe" else 0
    roles = ("gate_proj", "up_proj", "down_proj")
    return {"experts": c.get("num_experts", defaults[0]),
            "top_k": c.get("num_experts_per_tok", defaults[1]),
            "renormalise": c.get("norm_topk_prob", False), "width": width, "shared": shared,
            "block": "mlp", "roles": roles, "order": roles,
            "coef": c.get("router_aux_loss_coef", defaults[2])}


def moe_layers(c):
    """Which layers have a sparse MoE block: all of them in Mixtral and
    OLMoE; in Qwen2/Qwen3-MoE those not in mlp_only_layers with
    (i + 1) % decoder_sparse_step == 0 (the others a dense MLP of
    intermediate_size, Qwen2MoeDecoderLayer)."""
    n = c["num_hidden_layers"]
    if c["model_type"] in ("mixtral", "olmoe"):
        return [True] * n
    step = c.get("decoder_sparse_step", 1)
    only = c.get("mlp_only_layers") or []
    experts = moe_config(c)["experts"]
    return [i not in only and experts > 0 and (i + 1) % step == 0 for i in range(n)]


def moe_check(c):
    """What this reference does not implement, refused by key."""
    t = c["model_type"]
    if c.get("router_jitter_noise", 0.0):
        raise ValueError("router_jitter_noise: random multiplicative noise in training")
    if t == "olmoe" and c.get("clip_qkv") is not None:
        raise ValueError("clip_qkv")
    if t != "mixtral" and c.get("use_sliding_window"):
        raise ValueError("use_sliding_window")
    if c.get("hidden_act", "silu") != "silu":
        raise ValueError("hidden_act")
    m = moe_config(c)
    if any(moe_layers(c)) and not 1 <= m["top_k"] <= m["experts"]:
        # torch.sort's [:, :k] would quietly take all E experts.
        raise ValueError("num_experts_per_tok must be 1..number of experts")


def moe_shapes(c):
    """The state dict of MixtralForCausalLM, Qwen2MoeForCausalLM,
    Qwen3MoeForCausalLM or OlmoeForCausalLM, in module order: per layer
    self_attn (q/k/v/o, Qwen3-MoE's per-head and OLMoE's whole-projection
    q_norm/k_norm), then the MoE block (gate [E, D], experts 0..E-1,
    Qwen2-MoE's shared_expert and shared_expert_gate [1, D]) or a dense MLP,
    then input_layernorm and post_attention_layernorm."""
    moe_check(c)
    t, m = c["model_type"], moe_config(c)
    d, v = c["hidden_size"], c["vocab_size"]
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = head_dim(c)
    qkv_bias, o_bias = attention_biases(c)
    out = [("model.embed_tokens.weight", (v, d))]

    def proj(name, shape, bias):
        return [(name + ".weight", shape)] + ([(name + ".bias", (shape[0],))] if bias else [])

    def mlp(prefix, width):
        shapes = {m["roles"][0]: (width, d), m["roles"][1]: (width, d), m["roles"][2]: (d, width)}
        return [(prefix + name + ".weight", shapes[name]) for name in m["order"]]
    for i, sparse in enumerate(moe_layers(c)):
        p = f"model.layers.{i}."
        out += proj(p + "self_attn.q_proj", (h * hd, d), qkv_bias)
        out += proj(p + "self_attn.k_proj", (kvh * hd, d), qkv_bias)
        out += proj(p + "self_attn.v_proj", (kvh * hd, d), qkv_bias)
        out += proj(p + "self_attn.o_proj", (d, h * hd), o_bias)
        if t == "qwen3_moe":
            out += [(p + "self_attn.q_norm.weight", (hd,)), (p + "self_attn.k_norm.weight", (hd,))]
        if t == "olmoe":
            out += [(p + "self_attn.q_norm.weight", (h * hd,)),
                    (p + "self_attn.k_norm.weight", (kvh * hd,))]
        if sparse:
            b = p + m["block"] + "."
            out.append((b + "gate.weight", (m["experts"], d)))
            for e in range(m["experts"]):
                out += mlp(f"{b}experts.{e}.", m["width"])
            if m["shared"]:
                out += mlp(b + "shared_expert.", m["shared"])
                out.append((b + "shared_expert_gate.weight", (1, d)))
        else:
            out += mlp(p + "mlp.", c["intermediate_size"])
        out += [(p + "input_layernorm.weight", (d,)),
                (p + "post_attention_layernorm.weight", (d,))]
    return out + final_shapes(c)


def moe_active_parameters(c):
    """Parameters one token uses: everything but the E - k experts it is not
    routed to (the router's E rows, the shared expert, the embedding and
    the head count)."""
    m = moe_config(c)
    expert = 3 * c["hidden_size"] * m["width"]
    unused = sum(moe_layers(c)) * (m["experts"] - m["top_k"]) * expert
    return sum(math.prod(s) for _, s in moe_shapes(c)) - unused


def stable_topk(probs, k):
    """The k largest probabilities of each row and their experts, equal ones
    to the lower expert index first, as tgc breaks ties. torch.topk does not
    promise which of equal values it returns, so this selects with a stable
    descending sort instead."""
    values, experts = torch.sort(probs, dim=-1, descending=True, stable=True)
    return values[:, :k], experts[:, :k]


def route(m, logits, dtype):
    """The routers of MixtralSparseMoeBlock and its kin: softmax over the E
    logits in float32 (never below: an f64 run stays f64), the top k, the k
    weights renormalised to sum 1 if the family does, then cast to the
    hidden states' dtype. Returns (probs, experts [T, k], weights [T, k])."""
    probs = F.softmax(logits, dim=-1, dtype=torch.promote_types(logits.dtype, torch.float32))
    weights, experts = stable_topk(probs, m["top_k"])
    if m["renormalise"]:
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return probs, experts, weights.to(dtype)


def swiglu(c, P, prefix, roles, x):
    """An expert or dense MLP: down(silu(gate(x)) * up(x))."""
    gate, up, down = roles
    return linear(c, P, prefix + down,
                  F.silu(linear(c, P, prefix + gate, x)) * linear(c, P, prefix + up, x))


def moe_block(c, m, P, b, x):
    """The sparse block of prefix `b` on x [B, S, D]: each expert runs on its
    own rows (token order; possibly none, as OlmoeSparseMoeBlock runs every
    expert, so an expert no token chose gets a zero gradient, not none),
    scaled by the token's routing weight and added back with index_add;
    Qwen2-MoE adds sigmoid(shared_expert_gate(x)) * shared_expert(x).
    Returns the output and the router logits [B*S, E]."""
    B, S, D = x.shape
    flat = x.reshape(-1, D)
    logits = linear(c, P, b + "gate", flat)
    probs, experts, weights = route(m, logits, flat.dtype)
    out = torch.zeros_like(flat)
    for e in range(m["experts"]):
        rows, slot = torch.nonzero(experts == e, as_tuple=True)
        y = swiglu(c, P, f"{b}experts.{e}.", m["roles"], flat[rows]) * weights[rows, slot, None]
        out = out.index_add(0, rows, y.to(flat.dtype))
    if m["shared"]:
        shared = swiglu(c, P, b + "shared_expert.", m["roles"], flat)
        out = out + torch.sigmoid(linear(c, P, b + "shared_expert_gate", flat)) * shared
    routing_record(m, probs, experts)
    return out.reshape(B, S, D), logits


# What the last moe_loss routed, for compare_with_torch.py to report: per
# MoE layer (layer, tokens per expert, tokens whose k-th and (k+1)-th
# probabilities are equal, the smallest such margin), and the aux loss.
moe_record = {"layers": [], "aux": None}


def routing_record(m, probs, experts):
    k = m["top_k"]
    counts = torch.bincount(experts.reshape(-1), minlength=m["experts"]).tolist()
    ties, margin = 0, float("inf")
    if k < m["experts"]:
        ordered = torch.sort(probs.detach(), dim=-1, descending=True).values
        gap = ordered[:, k - 1] - ordered[:, k]
        ties, margin = int((gap == 0).sum()), gap.min().item()
    moe_record["layers"].append({"counts": counts, "ties": ties, "margin": margin})


def load_balancing_loss(router_logits, experts, k):
    """transformers' load_balancing_loss_func without an attention mask, over
    the router logits of every MoE layer, concatenated (L*T rows; dense
    layers give none): softmax (in the logits' dtype, unlike the router's),
    the top k again, tokens_per_expert = the mean over rows of the one-hot
    choices, [k, E] (one row per slot), router_prob_per_expert = the mean
    probability [E], aux = E * sum over slots and experts of their product.
    The sum over the k slots is not divided by k: balanced routing scores
    k, not 1. Only the probabilities carry a gradient. Ignored targets
    (-100) still count: HF has no mask here."""
    logits = torch.cat(router_logits, dim=0)
    probs = F.softmax(logits, dim=-1)
    _, chosen = stable_topk(probs, k)
    # HF: expert_mask.float(); kept in f64 when the run is f64.
    mask = F.one_hot(chosen, experts).to(torch.promote_types(probs.dtype, torch.float32))
    tokens_per_expert = mask.mean(dim=0)
    router_prob_per_expert = probs.mean(dim=0)
    return (tokens_per_expert * router_prob_per_expert.unsqueeze(0)).sum() * experts


def moe_loss(c, P, ids, targets):
    """transformers' MixtralForCausalLM, Qwen2MoeForCausalLM,
    Qwen3MoeForCausalLM and OlmoeForCausalLM: llama's pre-norm layers
    (input_layernorm, attention, post_attention_layernorm, MoE block or
    dense MLP) with each family's attention: Mixtral as Mistral (no biases,
    sliding_window, null by default), Qwen2-MoE q/k/v biases, Qwen3-MoE
    per-head q/k RMSNorm, OLMoE q/k RMSNorm over the whole projections before
    the heads are split. With output_router_logits (false by default) the
    loss gains router_aux_loss_coef * load_balancing_loss; its value is
    left in moe_record["aux"]."""
    moe_check(c)
    t, m = c["model_type"], moe_config(c)
    h = c["num_attention_heads"]
    kvh = c.get("num_key_value_heads") or h
    hd = head_dim(c)
    eps = c.get("rms_norm_eps", 1e-5 if t in ("mixtral", "olmoe") else 1e-6)
    B, S = ids.shape
    x = embedding(c, P, "model.embed_tokens", ids)
    theta, scaling = rope_settings(c)
    if t == "mixtral" and "rope_theta" not in c and not c.get("rope_parameters"):
        theta = 1e6  # MixtralConfig's default
    cos, sin = rope_cos_sin(S, hd, theta, x.dtype, scaling)
    window = c.get("sliding_window") if t == "mixtral" else None
    moe_record["layers"], moe_record["aux"] = [], None
    router_logits = []
    for i, sparse in enumerate(moe_layers(c)):
        p = f"model.layers.{i}."

        def lin(t_, name):
            return linear(c, P, p + name, t_)
        n = rms_norm(x, P[p + "input_layernorm.weight"], eps)
        q, k = lin(n, "self_attn.q_proj"), lin(n, "self_attn.k_proj")
        if t == "olmoe":  # OlmoeAttention: the whole projections, then heads
            q = rms_norm(q, P[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, P[p + "self_attn.k_norm.weight"], eps)
        q, k = q.view(B, S, h, hd), k.view(B, S, kvh, hd)
        if t == "qwen3_moe":  # Qwen3MoeAttention: per head
            q = rms_norm(q, P[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, P[p + "self_attn.k_norm.weight"], eps)
        v = lin(n, "self_attn.v_proj").view(B, S, kvh, hd).transpose(1, 2)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = causal_attention(q, k, v, window=window).transpose(1, 2).reshape(B, S, h * hd)
        x = x + lin(a, "self_attn.o_proj")
        n = rms_norm(x, P[p + "post_attention_layernorm.weight"], eps)
        if sparse:
            y, logits = moe_block(c, m, P, p + m["block"] + ".", n)
            moe_record["layers"][-1]["layer"] = i
            router_logits.append(logits)
        else:
            y = swiglu(c, P, p + "mlp.", m["roles"], n)
        x = x + y
    loss = lm_loss(c, P, rms_norm(x, P["model.norm.weight"], eps), targets)
    if c.get("output_router_logits", False) and router_logits:
        aux = load_balancing_loss(router_logits, m["experts"], m["top_k"])
        moe_record["aux"] = aux.detach()
        loss = loss + m["coef"] * aux
    return loss


def moe_stress(c, P):
    """Rewrites initial weights in place (before they are written for tgc)
    so that routing meets its edge cases. The first MoE layer sends every
    token to expert 0 (router row STRESS_LOGIT * e_0), none to expert E-1
    (-STRESS_LOGIT * e_0), and ties the others at logit 0 (zero rows), so
    a token's other k-1 slots go to experts 1..k-1 by the lower-index rule
    and experts k..E-1 get no token. The second MoE layer, if any, has all
    router rows zero: all E logits tie exactly and every token picks
    experts 0..k-1. Zero rows give logits of exactly 0 whatever the order of
    summation, so the ties hold in any implementation (equal non-zero rows
    need not: a vectorised product may sum two columns in different
    orders). RMSNorm'd inputs have no coordinate of a fixed sign, so the
    embedding gets one: column 0 is STRESS_EMBEDDING in every row (the
    others are ~0.02), which the residual stream barely changes, so every
    token's normalised router input is positive in coordinate 0."""
    m = moe_config(c)
    layers = [i for i, sparse in enumerate(moe_layers(c)) if sparse]
    with torch.no_grad():
        P["model.embed_tokens.weight"][:, 0] = STRESS_EMBEDDING
        for n, i in enumerate(layers[:2]):
            gate = P[f"model.layers.{i}.{m['block']}.gate.weight"]
            gate.zero_()
            if n == 0:
                gate[0, 0] = STRESS_LOGIT
                gate[-1, 0] = -STRESS_LOGIT
    return layers[:2]


# The stress weights: the embedding's constant coordinate and the router
# weight on it. Normalised, the coordinate is ~3 at hidden sizes of 32 to
# 48, so expert 0's logit is ~3: probability 0.77 to 0.96 in the awkward
# fixtures, leaving the tied experts' weights (0.01 to 0.07) well above 0.
STRESS_EMBEDDING = 0.1
STRESS_LOGIT = 1.0


def zero_centred_norms(c):
    """Whether the family's RMSNorms scale by (1 + weight) (the Gemmas)."""
    return c["model_type"].startswith("gemma")


def family(c):
    t = c["model_type"]
    if t == "gpt_neox":
        return neox_shapes, neox_loss
    if t == "olmo2":
        return olmo2_shapes, olmo2_loss
    if t == "gemma":
        return gemma_shapes, gemma_loss
    if t in ("gemma2", "gemma3_text"):
        return gemma2_shapes, gemma2_loss
    if t in ("llama", "mistral", "qwen2", "qwen3"):
        return llama_shapes, llama_loss
    if t == "phi3":
        return phi3_shapes, phi3_loss
    if t in MOE_FAMILIES:
        return moe_shapes, moe_loss
    if t == "gpt2":
        return gpt2_shapes, gpt2_loss
    if t == "mlp":
        return mlp_shapes, mlp_loss
    raise ValueError(t)


def precision_loss(loss_fn, c, P, inputs, precision):
    """The loss in tgc's --precision: fp32, or bf16-mixed as PyTorch does it
    (the forward pass under CPU autocast with bfloat16, the loss in f32)."""
    if precision != "bf16-mixed":
        return loss_fn(c, P, *inputs)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = loss_fn(c, P, *inputs)
    return loss.float()
