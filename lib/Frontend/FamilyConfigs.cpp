//===- FamilyConfigs.cpp - each model family's config.json keys -----------===//
//
// One reader per family of Hugging Face configs (the llama-like decoders,
// GPT-2, GPT-NeoX) and the tgc MLP: which keys change the math, their
// defaults as transformers' config classes set them, and the refusals.
//
//===----------------------------------------------------------------------===//

#include "ConfigReader.h"

#include "llvm/Support/Format.h"

using namespace tgc;
using namespace tgc::config;

/// The layers Qwen2/Qwen3 window, as Hugging Face's configs decide them:
/// none without use_sliding_window; else those layer_types marks
/// "sliding_attention", or by default those from max_window_layers on.
/// Empty when no layer is windowed.
/// The sizes every Hugging Face decoder config names alike (LlamaConfig,
/// GPTNeoXConfig and their kin).
static void readDecoderSizes(ConfigReader &r, ModelConfig &c) {
  c.vocabSize = r.integer("vocab_size", true).value_or(0);
  c.hiddenSize = r.integer("hidden_size", true).value_or(0);
  c.intermediateSize = r.integer("intermediate_size", true).value_or(0);
  c.numLayers = r.integer("num_hidden_layers", true).value_or(0);
  c.numHeads = r.integer("num_attention_heads", true).value_or(0);
}

/// The layers "layer_types" marks "sliding_attention" (one entry per
/// layer); nullopt where the key is absent or wrong (then with an error).
static std::optional<std::vector<bool>> readLayerTypes(ConfigReader &r,
                                                       const ModelConfig &c) {
  const Value *types = r.value("layer_types", false);
  if (!types)
    return std::nullopt;
  const llvm::json::Array *list = types->getAsArray();
  if (!list || static_cast<int64_t>(list->size()) != c.numLayers) {
    r.error("layer_types", llvm::formatv("expected an array of {0} entries "
                                         "(one per layer), got {1}",
                                         c.numLayers, describe(*types)));
    return std::nullopt;
  }
  std::vector<bool> windowed;
  for (const Value &entry : *list) {
    std::optional<llvm::StringRef> name = entry.getAsString();
    if (!name || (*name != "full_attention" && *name != "sliding_attention")) {
      r.error("layer_types", "entries must be \"full_attention\" or "
                             "\"sliding_attention\", got " +
                                 describe(entry));
      return std::nullopt;
    }
    windowed.push_back(*name == "sliding_attention");
  }
  return windowed;
}

static std::vector<bool> readQwenWindowedLayers(ConfigReader &r,
                                                const ModelConfig &c) {
  bool use = r.boolean("use_sliding_window").value_or(false);
  std::vector<bool> windowed;
  if (r.has("layer_types")) {
    windowed = readLayerTypes(r, c).value_or(std::vector<bool>());
  } else {
    int64_t first = r.integer("max_window_layers", false, 0).value_or(28);
    for (int64_t i = 0; i < c.numLayers; ++i)
      windowed.push_back(i >= first);
  }
  if (!use || llvm::none_of(windowed, [](bool w) { return w; }))
    return {};
  return windowed;
}

/// The sliding layers of Gemma 2 and 3: as layer_types says, or else every
/// layer but each `pattern`-th (Gemma 2: every other layer, from the first;
/// Gemma 3: sliding_window_pattern, 6 by default).
static std::vector<bool> readGemmaWindowedLayers(ConfigReader &r,
                                                 const ModelConfig &c) {
  if (r.has("layer_types"))
    return readLayerTypes(r, c).value_or(std::vector<bool>());
  int64_t pattern =
      c.modelType == "gemma2"
          ? 2
          : r.integer("sliding_window_pattern", false).value_or(6);
  std::vector<bool> windowed;
  for (int64_t i = 0; i < c.numLayers; ++i)
    windowed.push_back((i + 1) % pattern != 0);
  return windowed;
}

/// A soft cap: the key's number, none where it is null, `fallback` where
/// it is absent (Gemma2Config caps by default).
static std::optional<double> readSoftcap(ConfigReader &r, llvm::StringRef key,
                                         std::optional<double> fallback) {
  if (!r.present(key))
    return fallback;
  return r.number(key, false);
}

/// Gemma 2 and 3 beyond Gemma: sandwich norms, the score scale of
/// query_pre_attn_scalar, soft caps, sliding layers; Gemma 3's q/k norms and
/// the local RoPE base of its sliding layers.
static void readGemma2Or3(ConfigReader &r, ModelConfig &c) {
  bool gemma2 = c.modelType == "gemma2";
  c.sandwichNorms = true;
  double scalar = r.number("query_pre_attn_scalar", false).value_or(256.0);
  c.attentionScale = 1.0 / std::sqrt(scalar);
  c.attentionSoftcap =
      readSoftcap(r, "attn_logit_softcapping",
                  gemma2 ? std::optional<double>(50.0) : std::nullopt);
  c.logitSoftcap =
      readSoftcap(r, "final_logit_softcapping",
                  gemma2 ? std::optional<double>(30.0) : std::nullopt);
  c.slidingWindow = r.integer("sliding_window", false).value_or(4096);
  c.windowedLayers = readGemmaWindowedLayers(r, c);
  if (gemma2)
    return;
  c.qkNorm = QKNorm::PerHead;
  c.localRopeTheta = r.number("rope_local_base_freq", false).value_or(10000.0);
  if (r.boolean("use_bidirectional_attention").value_or(false))
    r.error("use_bidirectional_attention",
            "true is not supported (causal attention only)");
}

/// Gemma 3's newest configs give rope_parameters per layer type:
/// "full_attention" as any rope_parameters, "sliding_attention" the local
/// base (default RoPE only). Returns false where rope_parameters is not of
/// that form.
static bool readRopeByLayerType(ConfigReader &r, ModelConfig &c) {
  const Value *params = r.value("rope_parameters", false);
  const Object *obj = params ? params->getAsObject() : nullptr;
  if (!obj || !(obj->get("full_attention") || obj->get("sliding_attention")))
    return false;
  ConfigReader sub(r.getPath(), *obj, "rope_parameters.");
  for (const auto &[name, value] : *obj)
    if (name != "full_attention" && name != "sliding_attention")
      sub.error(name.str(), "expected only full_attention and "
                            "sliding_attention entries");
  readRopeSettings(sub, "full_attention", "rope_theta", c);
  if (const Value *local = sub.value("sliding_attention", false)) {
    const Object *lobj = local->getAsObject();
    if (!lobj) {
      sub.error("sliding_attention",
                "expected an object, got " + describe(*local));
    } else {
      ConfigReader localReader(r.getPath(), *lobj,
                               "rope_parameters.sliding_attention.");
      if (std::optional<std::string> type =
              localReader.string("rope_type", false);
          type && *type != "default")
        localReader.error("rope_type",
                          "\"" + *type +
                              "\" is not supported for sliding layers "
                              "(default only)");
      for (const auto &[name, value] : *lobj)
        if (name != "rope_theta" && name != "rope_type")
          localReader.error(name.str(), "is not read for sliding layers "
                                        "(default RoPE only)");
      if (auto theta = localReader.number("rope_theta", false))
        c.localRopeTheta = *theta;
      sub.adoptError(localReader);
    }
  }
  r.adoptError(sub);
  return true;
}

/// The expert blocks: MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock,
/// Qwen3MoeSparseMoeBlock, OlmoeSparseMoeBlock.
static void readMoE(ConfigReader &r, ModelConfig &c) {
  llvm::StringRef type = c.modelType;
  MoEConfig &m = c.moe;
  bool mixtral = type == "mixtral", qwen = type.starts_with("qwen");
  m.mixtralNames = mixtral;
  // Qwen's configs may say 0 experts (every layer dense); Mixtral's and
  // OLMoE's blocks need at least one.
  m.numExperts = r.integer(mixtral ? "num_local_experts" : "num_experts", false,
                           /*min=*/qwen ? 0 : 1)
                     .value_or(mixtral            ? 8
                               : type == "olmoe"     ? 64
                               : type == "qwen3_moe" ? 128
                                                     : 60);
  m.topK = r.integer("num_experts_per_tok", false, 1)
               .value_or(type == "qwen2_moe" ? 4 : type == "mixtral" ? 2 : 8);
  m.expertSize = qwen ? r.integer("moe_intermediate_size", false, 1)
                            .value_or(type == "qwen2_moe" ? 1408 : 768)
                      : c.intermediateSize;
  m.normalizeTopK = mixtral || r.boolean("norm_topk_prob").value_or(false);
  if (type == "qwen2_moe")
    m.sharedExpertSize =
        r.integer("shared_expert_intermediate_size", false, 1).value_or(5632);
  m.auxLoss = r.boolean("output_router_logits").value_or(false);
  m.auxLossCoef = r.number("router_aux_loss_coef", false, /*positive=*/false)
                      .value_or(type == "olmoe" ? 0.01 : 0.001);
  if (mixtral)
    if (auto jitter = r.number("router_jitter_noise", false, false);
        jitter && *jitter != 0.0)
      r.error("router_jitter_noise",
              llvm::formatv("{0} is not supported (training multiplies the "
                            "hidden states by noise; 0 only)",
                            llvm::format("%g", *jitter)));
  if (r.failed() || m.numExperts == 0)
    return; // Qwen's num_experts 0: every layer dense.
  if (m.topK > m.numExperts) {
    r.error("num_experts_per_tok",
            llvm::formatv("{0} experts per token is more than the {1} experts",
                          m.topK, m.numExperts));
    return;
  }
  // Qwen's rule: layer i has experts unless mlp_only_layers lists it, on
  // every decoder_sparse_step-th layer.
  int64_t step = qwen ? r.integer("decoder_sparse_step", false, 1).value_or(1)
                      : 1;
  std::vector<bool> dense(c.numLayers, false);
  if (const Value *only = qwen ? r.value("mlp_only_layers", false) : nullptr) {
    const llvm::json::Array *list = only->getAsArray();
    if (!list) {
      r.error("mlp_only_layers",
              "expected an array of layer indices, got " + describe(*only));
      return;
    }
    for (const Value &entry : *list) {
      std::optional<int64_t> i = entry.getAsInteger();
      if (!i || *i < 0 || *i >= c.numLayers) {
        r.error("mlp_only_layers",
                llvm::formatv("entries must be layer indices in [0, {0}), got "
                              "{1}",
                              c.numLayers, describe(entry)));
        return;
      }
      dense[*i] = true;
    }
  }
  for (int64_t i = 0; i < c.numLayers; ++i)
    m.sparseLayers.push_back(!dense[i] && (i + 1) % step == 0);
}

void tgc::config::readLlama(ConfigReader &r, ModelConfig &c) {
  c.family = ModelFamily::Llama;
  llvm::StringRef type = c.modelType;
  bool qwen = type == "qwen2" || type == "qwen3";
  bool qwenMoE = type == "qwen2_moe" || type == "qwen3_moe";
  bool gemma = type == "gemma" || type == "gemma2" || type == "gemma3_text";
  readDecoderSizes(r, c);
  c.numKVHeads = r.integer("num_key_value_heads", false).value_or(c.numHeads);
  c.maxPositions = r.integer("max_position_embeddings", true).value_or(0);
  c.normEps = r.number("rms_norm_eps", false).value_or(1e-6);
  c.ropeTheta = r.number("rope_theta", false)
                    .value_or(type == "gemma3_text" ? 1e6 : 10000.0);
  // The Gemma configs tie the head to the embedding unless told otherwise.
  c.tieWordEmbeddings = r.boolean("tie_word_embeddings").value_or(gemma);
  if (type == "qwen2") {
    // Qwen2Attention: q/k/v_proj with bias, o_proj without; the MLP has none.
    c.qkvBias = true;
  } else if (type == "qwen2_moe") {
    // As Qwen2's (transformers 5 names the switch qkv_bias).
    c.qkvBias = r.boolean("qkv_bias").value_or(true);
  } else if (type == "phi3") {
    // Phi3Attention and Phi3MLP: fused projections, never a bias (the
    // attention_bias its configs carry is not read).
    c.fusedProjections = true;
  } else if (type != "mistral" && type != "mixtral") {
    // MistralAttention (and Mixtral's) has no biases and reads no
    // attention_bias.
    c.qkvBias = c.outputBias = r.boolean("attention_bias").value_or(false);
  }
  // Only LlamaMLP reads mlp_bias; the other families' MLPs have none.
  if (type == "llama")
    c.mlpBias = r.boolean("mlp_bias").value_or(false);
  c.qkNorm = type == "qwen3" || type == "qwen3_moe" ? QKNorm::PerHead
             : type == "olmo2" || type == "olmoe"    ? QKNorm::Projection
                                                     : QKNorm::None;
  if (type == "olmoe" && r.present("clip_qkv"))
    if (auto clip = r.number("clip_qkv", false))
      r.error("clip_qkv", llvm::formatv("{0} is not supported (null only: "
                                        "queries, keys and values unclipped)",
                                        llvm::format("%g", *clip)));
  c.postNorms = type == "olmo2";
  c.gemmaScaling = gemma;
  if (gemma) {
    // GemmaMLP reads hidden_activation (gelu_pytorch_tanh when absent or
    // null) and ignores hidden_act, which Gemma's configs set to "gelu".
    c.activation = Activation::GeluTanh;
    if (auto act = r.string("hidden_activation", false))
      c.activation =
          parseActivation(r, "hidden_activation", *act).value_or(c.activation);
  } else if (auto act = r.string("hidden_act", false)) {
    c.activation =
        parseActivation(r, "hidden_act", *act).value_or(c.activation);
  }
  if (r.failed())
    return;
  // Qwen3Config's head_dim defaults to 128 and the Gemma configs' to 256,
  // whatever the width.
  std::optional<int64_t> headDim = r.integer("head_dim", false);
  if (!headDim && type == "qwen3")
    headDim = 128;
  if (!headDim && gemma)
    headDim = 256;
  if (c.hiddenSize % c.numHeads != 0 && !headDim)
    r.error("num_attention_heads",
            llvm::formatv("{0} heads do not divide hidden_size {1}", c.numHeads,
                          c.hiddenSize));
  c.headDim = headDim.value_or(c.numHeads ? c.hiddenSize / c.numHeads : 0);
  if (c.headDim % 2 != 0)
    r.error(
        "head_dim",
        llvm::formatv("RoPE needs an even head dimension, got {0}", c.headDim));
  if (c.numHeads % c.numKVHeads != 0)
    r.error("num_key_value_heads",
            llvm::formatv("{0} key/value heads do not divide {1} attention "
                          "heads",
                          c.numKVHeads, c.numHeads));
  // The window: query i sees keys i - W < j <= i. Mistral and Phi-3 window
  // every layer; Qwen only those readQwenWindowedLayers names (its released
  // configs carry a window they do not use). LlamaModel has no window: the
  // key does not change its math.
  if (type == "mistral" || type == "phi3" || type == "mixtral") {
    c.slidingWindow = r.integer("sliding_window", false);
  } else if (qwenMoE) {
    // Qwen2-MoE and Qwen3-MoE window layers by rules of their own.
    if (r.boolean("use_sliding_window").value_or(false))
      r.error("use_sliding_window", "true is not supported for " +
                                        type.str() + " (false only)");
  } else if (qwen) {
    c.windowedLayers = readQwenWindowedLayers(r, c);
    if (!c.windowedLayers.empty())
      c.slidingWindow = r.integer("sliding_window", true);
  } else if (type == "gemma2" || type == "gemma3_text") {
    readGemma2Or3(r, c);
  }
  readRopeSettings(r, "rope_scaling", "rope_theta", c);
  std::optional<double> partial;
  if (type != "gemma3_text" || !readRopeByLayerType(r, c))
    partial = readRopeSettings(r, "rope_parameters", "rope_theta", c);
  // Phi3's attention rotates the first head_dim · partial_rotary_factor
  // dimensions; the others apply RoPE to the whole head.
  readPartialRotary(r, "partial_rotary_factor", 1.0, partial,
                    /*supported=*/type == "phi3", c);
  if (type == "mixtral" || qwenMoE || type == "olmoe")
    readMoE(r, c);
}

/// GPTNeoXForCausalLM (Pythia): LayerNorms with bias, one query_key_value
/// projection interleaved per head, RoPE over the first rotary_pct of each
/// head, exact GELU, parallel residuals by default, an untied embed_out.
void tgc::config::readGPTNeoX(ConfigReader &r, ModelConfig &c) {
  c.family = ModelFamily::GPTNeoX;
  readDecoderSizes(r, c);
  c.maxPositions = r.integer("max_position_embeddings", true).value_or(0);
  c.normEps = r.number("layer_norm_eps", false).value_or(1e-5);
  c.ropeTheta = r.number("rotary_emb_base", false).value_or(10000.0);
  c.tieWordEmbeddings = r.boolean("tie_word_embeddings").value_or(false);
  c.parallelResidual = r.boolean("use_parallel_residual").value_or(true);
  // attention_bias covers query_key_value and dense; the MLP always has one.
  c.qkvBias = c.outputBias = r.boolean("attention_bias").value_or(true);
  c.mlpBias = true;
  c.activation = Activation::GeluErf;
  if (auto act = r.string("hidden_act", false))
    c.activation =
        parseActivation(r, "hidden_act", *act).value_or(c.activation);
  if (r.failed())
    return;
  if (c.hiddenSize % c.numHeads != 0) {
    r.error("num_attention_heads",
            llvm::formatv("{0} heads do not divide hidden_size {1}", c.numHeads,
                          c.hiddenSize));
    return;
  }
  c.numKVHeads = c.numHeads;
  c.headDim = c.hiddenSize / c.numHeads;
  readRopeSettings(r, "rope_scaling", "rotary_emb_base", c);
  std::optional<double> partial =
      readRopeSettings(r, "rope_parameters", "rotary_emb_base", c);
  if (!r.failed())
    readPartialRotary(r, "rotary_pct", 0.25, partial, /*supported=*/true, c);
}

void tgc::config::readGPT2(ConfigReader &r, ModelConfig &c) {
  c.family = ModelFamily::GPT2;
  c.vocabSize = r.integer("vocab_size", true).value_or(0);
  c.hiddenSize = r.integer("n_embd", true).value_or(0);
  c.numLayers = r.integer("n_layer", true).value_or(0);
  c.numHeads = r.integer("n_head", true).value_or(0);
  c.maxPositions = r.integer("n_positions", true).value_or(0);
  c.intermediateSize = r.integer("n_inner", false).value_or(4 * c.hiddenSize);
  c.normEps = r.number("layer_norm_epsilon", false).value_or(1e-5);
  c.activation = Activation::GeluTanh;
  if (auto act = r.string("activation_function", false))
    c.activation =
        parseActivation(r, "activation_function", *act).value_or(c.activation);
  // GPT2LMHeadModel always ties lm_head to wte.
  c.tieWordEmbeddings = r.boolean("tie_word_embeddings").value_or(true);
  if (!c.tieWordEmbeddings)
    r.error("tie_word_embeddings", "GPT-2 ties lm_head to wte; false is not "
                                   "supported");
  if (r.failed())
    return;
  if (c.hiddenSize % c.numHeads != 0)
    r.error("n_head", llvm::formatv("{0} heads do not divide n_embd {1}",
                                    c.numHeads, c.hiddenSize));
  c.numKVHeads = c.numHeads;
  c.headDim = c.hiddenSize / c.numHeads;
  c.qkvBias = c.outputBias = c.mlpBias = true;
}

void tgc::config::readMLP(ConfigReader &r, ModelConfig &c) {
  c.family = ModelFamily::MLP;
  const Value *layers = r.value("layers", true);
  if (!layers)
    return;
  const llvm::json::Array *sizes = layers->getAsArray();
  if (!sizes) {
    r.error("layers",
            "expected an array of layer sizes, got " + describe(*layers));
    return;
  }
  if (sizes->size() < 2) {
    r.error("layers", llvm::formatv("needs at least an input and an output "
                                    "size, got {0} entries",
                                    sizes->size()));
    return;
  }
  for (size_t i = 0; i < sizes->size(); ++i) {
    std::optional<int64_t> n = (*sizes)[i].getAsInteger();
    if (!n || *n < 1) {
      r.error("layers", llvm::formatv("entry {0} must be a positive integer, "
                                      "got {1}",
                                      i, describe((*sizes)[i])));
      return;
    }
    if (*n > ConfigReader::kMaxSize) {
      r.error("layers",
              llvm::formatv("entry {0} is too large: {1} (at most {2})", i, *n,
                            ConfigReader::kMaxSize));
      return;
    }
    c.layerSizes.push_back(*n);
  }
  c.activation = Activation::ReLU;
  if (auto act = r.string("activation", false))
    c.activation =
        parseActivation(r, "activation", *act).value_or(c.activation);
  c.bias = r.boolean("bias").value_or(true);
  c.vocabSize = c.layerSizes.back(); // classes
}
