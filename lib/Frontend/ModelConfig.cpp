//===- ModelConfig.cpp - reading model description files ------------------===//
//
// Every error names the file and the key; unknown keys are ignored because
// Hugging Face configs carry many that do not change the graph.
//
//===----------------------------------------------------------------------===//

#include "tgc/Frontend/ModelConfig.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <cstdio>

using namespace tgc;
using llvm::json::Object;
using llvm::json::Value;

llvm::StringRef tgc::stringifyActivation(Activation act) {
  switch (act) {
  case Activation::ReLU:
    return "relu";
  case Activation::GeluErf:
    return "gelu";
  case Activation::GeluTanh:
    return "gelu_tanh";
  case Activation::SiLU:
    return "silu";
  }
  llvm_unreachable("unknown activation");
}

unsigned tgc::dtypeBytes(DType dtype) { return dtype == DType::F32 ? 4 : 2; }

llvm::StringRef tgc::stringifyDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  }
  llvm_unreachable("unknown dtype");
}

namespace {

/// Describes a JSON value for messages: `string "abc"`, `number 3.5`.
std::string describe(const Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  switch (v.kind()) {
  case Value::Null:
    return "null";
  case Value::Boolean:
    return *v.getAsBoolean() ? "true" : "false";
  case Value::Number:
    os << "number " << v;
    return s;
  case Value::String:
    os << "string " << v;
    return s;
  case Value::Array:
    return "an array";
  case Value::Object:
    return "an object";
  }
  return "a value";
}

/// Typed access to the keys of one JSON object. The first error wins and is
/// reported with the file name and the key's full path ("training.lr").
class ConfigReader {
public:
  static constexpr int64_t kMaxSize = int64_t(1) << 31;

  ConfigReader(llvm::StringRef path, const Object &object,
               std::string prefix = "")
      : path(path), object(object), prefix(std::move(prefix)) {}

  bool has(llvm::StringRef key) const {
    const Value *v = object.get(key);
    return v && v->kind() != Value::Null;
  }

  std::optional<int64_t> integer(llvm::StringRef key, bool required,
                                 int64_t min = 1) {
    const Value *v = lookup(key, required);
    if (!v)
      return std::nullopt;
    std::optional<int64_t> i = v->getAsInteger();
    if (!i) {
      // 768.0 is still an integer; 7.5 is not.
      if (std::optional<double> d = v->getAsNumber();
          d && std::floor(*d) == *d && std::fabs(*d) < 9e15)
        i = static_cast<int64_t>(*d);
    }
    if (!i)
      return error(key, "expected an integer, got " + describe(*v));
    if (*i < min)
      return error(key, llvm::formatv("must be >= {0}, got {1}", min, *i));
    // Sizes multiply into element counts; keep every one well inside int64.
    if (*i > kMaxSize)
      return error(
          key, llvm::formatv("{0} is too large (at most {1})", *i, kMaxSize));
    return i;
  }

  std::optional<double> number(llvm::StringRef key, bool required,
                               bool positive = true) {
    const Value *v = lookup(key, required);
    if (!v)
      return std::nullopt;
    std::optional<double> d = v->getAsNumber();
    if (!d)
      return error(key, "expected a number, got " + describe(*v));
    if (!std::isfinite(*d) || (positive && *d <= 0) || *d < 0)
      return error(key,
                   llvm::formatv("must be {0}, got {1}",
                                 positive ? "positive" : "non-negative", *d));
    return d;
  }

  std::optional<bool> boolean(llvm::StringRef key) {
    const Value *v = lookup(key, false);
    if (!v)
      return std::nullopt;
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return error(key, "expected true or false, got " + describe(*v));
    return b;
  }

  std::optional<std::string> string(llvm::StringRef key, bool required) {
    const Value *v = lookup(key, required);
    if (!v)
      return std::nullopt;
    std::optional<llvm::StringRef> s = v->getAsString();
    if (!s)
      return error(key, "expected a string, got " + describe(*v));
    return s->str();
  }

  const Value *value(llvm::StringRef key, bool required) {
    return lookup(key, required);
  }

  /// Records an error about `key` (if none was recorded yet).
  std::nullopt_t error(llvm::StringRef key, const llvm::Twine &message) {
    if (!firstError)
      firstError = llvm::formatv("{0}: key '{1}{2}': {3}", path, prefix, key,
                                 message.str())
                       .str();
    return std::nullopt;
  }

  /// Records an error not tied to one key.
  void fail(const llvm::Twine &message) {
    if (!firstError)
      firstError = (path + ": " + message).str();
  }

  llvm::StringRef getPath() const { return path; }
  bool failed() const { return firstError.has_value(); }
  const std::optional<std::string> &getError() const { return firstError; }
  void adoptError(const ConfigReader &other) {
    if (!firstError && other.firstError)
      firstError = other.firstError;
  }

private:
  const Value *lookup(llvm::StringRef key, bool required) {
    const Value *v = object.get(key);
    if (v && v->kind() == Value::Null)
      v = nullptr;
    if (!v && required && !firstError)
      firstError =
          llvm::formatv("{0}: missing required key '{1}{2}'", path, prefix, key)
              .str();
    return v;
  }

  std::string path;
  const Object &object;
  std::string prefix;
  std::optional<std::string> firstError;
};

std::optional<Activation> parseActivation(ConfigReader &reader,
                                          llvm::StringRef key,
                                          llvm::StringRef name) {
  auto act = llvm::StringSwitch<std::optional<Activation>>(name)
                 .Case("relu", Activation::ReLU)
                 .Cases({"gelu", "gelu_python"}, Activation::GeluErf)
                 .Cases({"gelu_new", "gelu_pytorch_tanh", "gelu_tanh",
                         "gelu_fast"},
                        Activation::GeluTanh)
                 .Cases({"silu", "swish"}, Activation::SiLU)
                 .Default(std::nullopt);
  if (!act)
    reader.error(key, "unsupported activation \"" + name +
                          "\" (expected relu, gelu, gelu_new, "
                          "gelu_pytorch_tanh, gelu_fast or silu)");
  return act;
}

/// The RoPE variant an object such as rope_scaling names, by "rope_type" or
/// the legacy "type"; "default" where it names none. nullopt: not an object,
/// or a type that is not a string.
std::optional<std::string> ropeType(const Value &v) {
  const Object *obj = v.getAsObject();
  if (!obj)
    return std::nullopt;
  const Value *type = obj->get("rope_type");
  if (!type)
    type = obj->get("type");
  if (!type)
    return std::string("default");
  if (std::optional<llvm::StringRef> s = type->getAsString())
    return s->str();
  return std::nullopt;
}

/// Reads one object of RoPE settings: "rope_scaling", or "rope_parameters"
/// (newer configs, which keep rope_theta and partial_rotary_factor there
/// too; the top-level `thetaKey` must agree). The variant is named by
/// "rope_type" or the legacy "type"; each variant takes its own keys, as
/// transformers' rope init functions read them. Variants tgc does not build,
/// and keys no variant here reads, are refused by name. Returns the
/// partial_rotary_factor of rope_parameters, if any.
std::optional<double> readRopeSettings(ConfigReader &r, llvm::StringRef key,
                                       llvm::StringRef thetaKey,
                                       ModelConfig &c) {
  const Value *settings = r.value(key, false);
  if (!settings)
    return std::nullopt;
  const Object *obj = settings->getAsObject();
  if (!obj) {
    r.error(key, "expected an object, got " + describe(*settings));
    return std::nullopt;
  }
  std::optional<std::string> type = ropeType(*settings);
  if (!type) {
    r.error(key, "rope_type must be a string");
    return std::nullopt;
  }
  RopeScaling scaling;
  llvm::SmallVector<llvm::StringRef, 8> keys = {"rope_type", "type"};
  if (key == "rope_parameters")
    keys.append({"rope_theta", "partial_rotary_factor"});
  if (*type == "linear") {
    scaling.kind = RopeScalingKind::Linear;
    keys.push_back("factor");
  } else if (*type == "llama3") {
    scaling.kind = RopeScalingKind::Llama3;
    keys.append({"factor", "low_freq_factor", "high_freq_factor",
                 "original_max_position_embeddings"});
  } else if (*type != "default") {
    r.error(key, "RoPE scaling type \"" + *type +
                     "\" is not supported (supported: default, linear, "
                     "llama3)");
    return std::nullopt;
  }
  ConfigReader sub(r.getPath(), *obj, (key + ".").str());
  for (const auto &[name, value] : *obj)
    if (!llvm::is_contained(keys, name.str()))
      sub.error(name.str(), "is not read by rope_type \"" + *type +
                                "\" and would change the math elsewhere; "
                                "remove it");
  if (scaling.kind != RopeScalingKind::None) {
    scaling.factor = sub.number("factor", true).value_or(1.0);
    if (!sub.failed() && scaling.factor < 1.0)
      sub.error("factor", llvm::formatv("must be >= 1, got {0}",
                                        llvm::format("%g", scaling.factor)));
  }
  if (scaling.kind == RopeScalingKind::Llama3) {
    scaling.lowFreqFactor = sub.number("low_freq_factor", true).value_or(1.0);
    scaling.highFreqFactor = sub.number("high_freq_factor", true).value_or(4.0);
    scaling.originalMaxPositions =
        sub.integer("original_max_position_embeddings", true).value_or(1);
    if (!sub.failed() && scaling.highFreqFactor <= scaling.lowFreqFactor)
      sub.error("high_freq_factor",
                llvm::formatv("must be greater than low_freq_factor {0}, got "
                              "{1}",
                              llvm::format("%g", scaling.lowFreqFactor),
                              llvm::format("%g", scaling.highFreqFactor)));
  }
  std::optional<double> theta, partial;
  if (key == "rope_parameters") {
    theta = sub.number("rope_theta", false);
    partial = sub.number("partial_rotary_factor", false);
  }
  r.adoptError(sub);
  if (r.failed())
    return std::nullopt;
  if (scaling.kind != RopeScalingKind::None) {
    if (c.ropeScaling.kind != RopeScalingKind::None)
      r.error(key, "rope_scaling and rope_parameters both scale RoPE; keep "
                   "one of them");
    c.ropeScaling = scaling;
  }
  if (!theta)
    return partial;
  if (r.has(thetaKey) && *theta != c.ropeTheta)
    r.error(key, llvm::formatv("rope_theta {0} contradicts the top-level "
                               "{1} {2}",
                               llvm::format("%g", *theta), thetaKey,
                               llvm::format("%g", c.ropeTheta)));
  c.ropeTheta = *theta;
  return partial;
}

/// The rotated share of each head from a top-level key (`key`: rotary_pct,
/// partial_rotary_factor; `fallback` where absent) and rope_parameters'
/// partial_rotary_factor (`nested`), which must agree. Sets c.rotaryDims to
/// int(head_dim · factor), as transformers computes it; `supported` false
/// refuses every factor but 1.
void readPartialRotary(ConfigReader &r, llvm::StringRef key, double fallback,
                       std::optional<double> nested, bool supported,
                       ModelConfig &c) {
  std::optional<double> top = r.number(key, false);
  if (r.failed())
    return;
  if (top && nested && *top != *nested) {
    r.error("rope_parameters",
            llvm::formatv("partial_rotary_factor {0} contradicts the "
                          "top-level {1} {2}",
                          llvm::format("%g", *nested), key,
                          llvm::format("%g", *top)));
    return;
  }
  llvm::StringRef named = top ? key : "rope_parameters";
  double factor = top ? *top : nested.value_or(fallback);
  if (factor == 1.0)
    return;
  if (!supported) {
    r.error(named, llvm::formatv("a partial rotary factor of {0} is not "
                                 "supported by model_type \"{1}\" (RoPE "
                                 "over the whole head only: 1.0)",
                                 llvm::format("%g", factor), c.modelType));
    return;
  }
  auto rotated = static_cast<int64_t>(static_cast<double>(c.headDim) * factor);
  if (factor > 1.0 || rotated < 2 || rotated % 2 != 0)
    r.error(named, llvm::formatv("a partial rotary factor of {0} rotates {1} "
                                 "of the {2} dimensions of each head; RoPE "
                                 "needs an even number from 2 to {2}",
                                 llvm::format("%g", factor), rotated,
                                 c.headDim));
  else
    c.rotaryDims = rotated;
}

/// The layers Qwen2/Qwen3 window, as Hugging Face's configs decide them:
/// none without use_sliding_window; else those layer_types marks
/// "sliding_attention", or by default those from max_window_layers on.
/// Empty when no layer is windowed.
std::vector<bool> readQwenWindowedLayers(ConfigReader &r,
                                         const ModelConfig &c) {
  bool use = r.boolean("use_sliding_window").value_or(false);
  std::vector<bool> windowed;
  if (const Value *types = r.value("layer_types", false)) {
    const llvm::json::Array *list = types->getAsArray();
    if (!list || static_cast<int64_t>(list->size()) != c.numLayers) {
      r.error("layer_types",
              llvm::formatv("expected an array of {0} entries (one per "
                            "layer), got {1}",
                            c.numLayers, describe(*types)));
      return {};
    }
    for (const Value &entry : *list) {
      std::optional<llvm::StringRef> name = entry.getAsString();
      if (!name || (*name != "full_attention" && *name != "sliding_attention")) {
        r.error("layer_types", "entries must be \"full_attention\" or "
                               "\"sliding_attention\", got " +
                                   describe(entry));
        return {};
      }
      windowed.push_back(*name == "sliding_attention");
    }
  } else {
    int64_t first = r.integer("max_window_layers", false, 0).value_or(28);
    for (int64_t i = 0; i < c.numLayers; ++i)
      windowed.push_back(i >= first);
  }
  if (!use || llvm::none_of(windowed, [](bool w) { return w; }))
    return {};
  return windowed;
}

void readLlama(ConfigReader &r, ModelConfig &c) {
  c.family = ModelFamily::Llama;
  llvm::StringRef type = c.modelType;
  bool qwen = type == "qwen2" || type == "qwen3";
  c.vocabSize = r.integer("vocab_size", true).value_or(0);
  c.hiddenSize = r.integer("hidden_size", true).value_or(0);
  c.intermediateSize = r.integer("intermediate_size", true).value_or(0);
  c.numLayers = r.integer("num_hidden_layers", true).value_or(0);
  c.numHeads = r.integer("num_attention_heads", true).value_or(0);
  c.numKVHeads = r.integer("num_key_value_heads", false).value_or(c.numHeads);
  c.maxPositions = r.integer("max_position_embeddings", true).value_or(0);
  c.normEps = r.number("rms_norm_eps", false).value_or(1e-6);
  c.ropeTheta = r.number("rope_theta", false).value_or(10000.0);
  // GemmaConfig ties the head to the embedding unless told otherwise.
  c.tieWordEmbeddings =
      r.boolean("tie_word_embeddings").value_or(type == "gemma");
  if (type == "qwen2") {
    // Qwen2Attention: q/k/v_proj with bias, o_proj without; the MLP has none.
    c.qkvBias = true;
  } else if (type == "phi3") {
    // Phi3Attention and Phi3MLP: fused projections, never a bias (the
    // attention_bias its configs carry is not read).
    c.fusedProjections = true;
  } else {
    c.qkvBias = c.outputBias = r.boolean("attention_bias").value_or(false);
  }
  if (!qwen && type != "phi3" && type != "gemma")
    c.mlpBias = r.boolean("mlp_bias").value_or(false);
  c.qkNorm = type == "qwen3"   ? QKNorm::PerHead
             : type == "olmo2" ? QKNorm::Projection
                               : QKNorm::None;
  c.postNorms = type == "olmo2";
  c.gemmaScaling = type == "gemma";
  if (type == "gemma") {
    // GemmaMLP reads hidden_activation (gelu_pytorch_tanh when absent or
    // null) and ignores hidden_act, which Gemma's configs set to "gelu".
    c.activation = Activation::GeluTanh;
    if (auto act = r.string("hidden_activation", false))
      c.activation = parseActivation(r, "hidden_activation", *act)
                         .value_or(c.activation);
  } else if (auto act = r.string("hidden_act", false)) {
    c.activation =
        parseActivation(r, "hidden_act", *act).value_or(c.activation);
  }
  if (r.failed())
    return;
  // Qwen3Config's head_dim defaults to 128 and GemmaConfig's to 256,
  // whatever the width.
  std::optional<int64_t> headDim = r.integer("head_dim", false);
  if (!headDim && type == "qwen3")
    headDim = 128;
  if (!headDim && type == "gemma")
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
  if (type == "mistral" || type == "phi3") {
    c.slidingWindow = r.integer("sliding_window", false);
  } else if (qwen) {
    c.windowedLayers = readQwenWindowedLayers(r, c);
    if (!c.windowedLayers.empty())
      c.slidingWindow = r.integer("sliding_window", true);
  }
  readRopeSettings(r, "rope_scaling", "rope_theta", c);
  std::optional<double> partial =
      readRopeSettings(r, "rope_parameters", "rope_theta", c);
  // Phi3's attention rotates the first head_dim · partial_rotary_factor
  // dimensions; the others apply RoPE to the whole head.
  readPartialRotary(r, "partial_rotary_factor", 1.0, partial,
                    /*supported=*/type == "phi3", c);
}

/// GPTNeoXForCausalLM (Pythia): LayerNorms with bias, one query_key_value
/// projection interleaved per head, RoPE over the first rotary_pct of each
/// head, exact GELU, parallel residuals by default, an untied embed_out.
void readGPTNeoX(ConfigReader &r, ModelConfig &c) {
  c.family = ModelFamily::GPTNeoX;
  c.vocabSize = r.integer("vocab_size", true).value_or(0);
  c.hiddenSize = r.integer("hidden_size", true).value_or(0);
  c.intermediateSize = r.integer("intermediate_size", true).value_or(0);
  c.numLayers = r.integer("num_hidden_layers", true).value_or(0);
  c.numHeads = r.integer("num_attention_heads", true).value_or(0);
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
            llvm::formatv("{0} heads do not divide hidden_size {1}",
                          c.numHeads, c.hiddenSize));
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

void readGPT2(ConfigReader &r, ModelConfig &c) {
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

void readMLP(ConfigReader &r, ModelConfig &c) {
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

void readTraining(ConfigReader &r, TrainingConfig &t) {
  if (auto v = r.integer("batch_size", false))
    t.batchSize = *v;
  if (auto v = r.integer("seq_len", false))
    t.seqLen = *v;
  if (auto name = r.string("optimizer", false)) {
    if (std::optional<OptimizerKind> kind = mlir::tg::parseOptimizerKind(*name))
      t.optimizer = *kind;
    else
      r.error("optimizer",
              "expected \"sgd\" or \"adamw\", got \"" + *name + "\"");
  }
  if (auto v = r.number("lr", false))
    t.lr = *v;
  if (const llvm::json::Value *betas = r.value("betas", false)) {
    const llvm::json::Array *a = betas->getAsArray();
    std::optional<double> b1, b2;
    if (a && a->size() == 2) {
      b1 = (*a)[0].getAsNumber();
      b2 = (*a)[1].getAsNumber();
    }
    if (!b1 || !b2 || *b1 < 0 || *b1 >= 1 || *b2 < 0 || *b2 >= 1)
      r.error("betas", "expected [beta1, beta2] with each in [0, 1), got " +
                           describe(*betas));
    else {
      t.beta1 = *b1;
      t.beta2 = *b2;
    }
  }
  if (auto v = r.number("eps", false))
    t.eps = *v;
  if (auto v = r.number("weight_decay", false, /*positive=*/false))
    t.weightDecay = *v;
  if (auto v = r.number("momentum", false, /*positive=*/false))
    t.momentum = *v;
  if (auto v = r.number("grad_clip", false, /*positive=*/false))
    t.gradClip = *v;
  if (auto name = r.string("dtype", false)) {
    if (*name == "f32" || *name == "float32")
      t.dtype = DType::F32;
    else if (*name == "bf16" || *name == "bfloat16")
      t.dtype = DType::BF16;
    else if (*name == "f16" || *name == "float16")
      t.dtype = DType::F16;
    else
      r.error("dtype",
              "expected \"f32\", \"bf16\" or \"f16\", got \"" + *name + "\"");
  }
  if (auto name = r.string("precision", false)) {
    if (std::optional<Precision> p = mlir::tg::parsePrecision(*name))
      t.precision = *p;
    else
      r.error("precision",
              "expected \"fp32\", \"bf16-mixed\" or \"fp16-mixed\", got \"" +
                  *name + "\"");
  }
  if (auto name = r.string("fusion", false)) {
    if (std::optional<FusionMode> mode = mlir::tg::parseFusionMode(*name))
      t.fusion = *mode;
    else
      r.error("fusion",
              "expected \"none\" or \"default\", got \"" + *name + "\"");
  }
  if (auto v = r.integer("grad_accum", false, 1))
    t.gradAccum = *v;
  // "dynamic", "none", or a fixed scale as a number (or its text).
  if (const llvm::json::Value *v = r.value("loss_scale", false)) {
    std::optional<LossScaleSetting> setting;
    if (std::optional<double> d = v->getAsNumber()) {
      if (*d > 0 && std::isfinite(*d))
        setting = LossScaleSetting{LossScaling::Static, *d};
    } else if (std::optional<llvm::StringRef> s = v->getAsString()) {
      setting = mlir::tg::parseLossScaleSetting(*s);
    }
    if (setting)
      t.lossScale = setting;
    else
      r.error("loss_scale",
              "expected \"dynamic\", \"none\" or a positive number, got " +
                  describe(*v));
  }
  if (auto v = r.number("loss_scale_init", false))
    t.lossScaleInit = *v;
  if (auto v = r.integer("loss_scale_growth_interval", false, 1))
    t.lossScaleGrowthInterval = *v;
  if (auto v = r.boolean("optimizer_in_backward"))
    t.optimizerInBackward = *v;
  if (auto v = r.boolean("guard_update"))
    t.guardUpdate = *v;
  if (auto v = r.integer("seed", false, 0))
    t.seed = static_cast<uint64_t>(*v);
  if (auto v = r.integer("steps", false, 0))
    t.steps = *v;
}

/// Turns llvm::json's "[line:col, byte=N]: message" into "file:line:col: ...".
std::string formatParseError(llvm::StringRef path, llvm::Error error) {
  std::string raw = llvm::toString(std::move(error));
  llvm::SmallVector<llvm::StringRef, 4> m;
  llvm::Regex re("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$");
  unsigned column = 0;
  if (re.match(raw, &m) && !m[2].getAsInteger(10, column))
    return llvm::formatv("{0}:{1}:{2}: invalid JSON: {3}", path, m[1],
                         std::max(column, 1u), m[3])
        .str();
  return (path + ": invalid JSON: " + raw).str();
}

} // namespace

llvm::Error tgc::checkLossScale(const TrainingConfig &t, llvm::StringRef path) {
  if (!(t.lossScaleInit > 0) || !std::isfinite(t.lossScaleInit))
    return llvm::createStringError(
        llvm::formatv("{0}: loss scale init must be a positive number, got {1}",
                      path, t.lossScaleInit));
  if (t.lossScaleGrowthInterval < 1)
    return llvm::createStringError(llvm::formatv(
        "{0}: loss scale growth interval must be at least 1, got {1}", path,
        t.lossScaleGrowthInterval));
  if (t.guardUpdate == false && t.lossScaling() != LossScaling::None)
    return llvm::createStringError(llvm::formatv(
        "{0}: guard_update (--guard-update) false needs loss scaling off "
        "(--loss-scale=none): a loss-scaled step always skips the updates of "
        "gradients that overflow (loss scaling is {1} here)",
        path, mlir::tg::stringifyLossScaling(t.lossScaling())));
  return llvm::Error::success();
}

/// The checks that hold for the file alone, before any flag overrides it.
static llvm::Error validateSettings(const ModelConfig &c) {
  if (c.family != ModelFamily::MLP && c.training.seqLen > c.maxPositions)
    return llvm::createStringError(llvm::formatv(
        "{0}: seq_len {1} exceeds the model's {2} positions ({3})", c.path,
        c.training.seqLen, c.maxPositions,
        c.family == ModelFamily::GPT2 ? "n_positions"
                                      : "max_position_embeddings"));
  if (c.training.precision != Precision::FP32 && c.training.dtype != DType::F32)
    return llvm::createStringError(llvm::formatv(
        "{0}: precision {1} keeps f32 parameters (the optimizer's masters) "
        "and needs dtype f32, not {2}",
        c.path, mlir::tg::stringifyPrecision(c.training.precision),
        stringifyDType(c.training.dtype)));
  if (llvm::Error err = checkLossScale(c.training, c.path))
    return err;
  return llvm::Error::success();
}

llvm::Error tgc::validateModelConfig(const ModelConfig &c) {
  if (llvm::Error err = validateSettings(c))
    return err;
  return llvm::Error::success();
}

bool ModelConfig::slidingLayer(int64_t layer) const {
  if (!slidingWindow)
    return false;
  return windowedLayers.empty() ||
         (layer < static_cast<int64_t>(windowedLayers.size()) &&
          windowedLayers[layer]);
}

std::optional<int64_t> ModelConfig::attentionWindow(int64_t layer) const {
  if (!slidingLayer(layer) || *slidingWindow >= seqLen())
    return std::nullopt;
  return slidingWindow;
}

llvm::Error tgc::checkJSONNesting(llvm::StringRef text, llvm::StringRef path,
                                  unsigned maxDepth) {
  unsigned depth = 0, line = 1, column = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
    }
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return llvm::createStringError(
            llvm::formatv("{0}:{1}:{2}: JSON nesting deeper than {3} levels",
                          path, line, column, maxDepth));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return llvm::Error::success();
}

llvm::Expected<ModelConfig> tgc::parseModelConfig(llvm::StringRef text,
                                                  llvm::StringRef path) {
  // llvm::json::parse recurses once per level: refuse deep nesting first.
  if (llvm::Error err = checkJSONNesting(text, path))
    return std::move(err);
  llvm::Expected<Value> json = llvm::json::parse(text);
  if (!json)
    return llvm::createStringError(formatParseError(path, json.takeError()));
  const Object *root = json->getAsObject();
  if (!root)
    return llvm::createStringError(
        llvm::formatv("{0}: expected a JSON object at the top level, got {1}",
                      path, describe(*json)));

  ModelConfig config;
  config.path = path.str();
  ConfigReader reader(path, *root);
  std::optional<std::string> type = reader.string("model_type", true);
  if (type) {
    config.modelType = *type;
    if (*type == "llama" || *type == "mistral" || *type == "qwen2" ||
        *type == "qwen3" || *type == "phi3" || *type == "gemma" ||
        *type == "olmo2")
      readLlama(reader, config);
    else if (*type == "gpt2")
      readGPT2(reader, config);
    else if (*type == "gpt_neox")
      readGPTNeoX(reader, config);
    else if (*type == "mlp")
      readMLP(reader, config);
    else
      reader.error("model_type", "unknown model type \"" + *type +
                                     "\" (expected llama, mistral, qwen2, "
                                     "qwen3, phi3, gemma, olmo2, gpt2, "
                                     "gpt_neox or mlp)");
  }
  if (const Value *training = reader.value("training", false)) {
    if (const Object *obj = training->getAsObject()) {
      ConfigReader sub(path, *obj, "training.");
      readTraining(sub, config.training);
      reader.adoptError(sub);
    } else {
      reader.error("training",
                   "expected an object, got " + describe(*training));
    }
  }
  if (reader.failed())
    return llvm::createStringError(*reader.getError());
  if (llvm::Error err = validateSettings(config))
    return std::move(err);
  return config;
}

llvm::Expected<ModelConfig> tgc::loadModelConfig(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(llvm::formatv(
        "{0}: cannot read model file: {1}", path, buffer.getError().message()));
  return parseModelConfig((*buffer)->getBuffer(), path);
}

std::vector<double> tgc::ropeInverseFrequencies(const ModelConfig &c) {
  const RopeScaling &scaling = c.ropeScaling;
  int64_t dim = c.rotatedDims();
  std::vector<double> frequencies;
  for (int64_t i = 0; i < dim / 2; ++i) {
    double f = 1.0 / std::pow(c.ropeTheta, 2.0 * i / dim);
    switch (scaling.kind) {
    case RopeScalingKind::None:
      break;
    case RopeScalingKind::Linear:
      f /= scaling.factor;
      break;
    case RopeScalingKind::Llama3: {
      // Long wavelengths are divided by the factor, short ones kept, and the
      // band between interpolates (transformers' _compute_llama3_parameters).
      double original = static_cast<double>(scaling.originalMaxPositions);
      double lowWavelen = original / scaling.lowFreqFactor;
      double highWavelen = original / scaling.highFreqFactor;
      double wavelen = 2.0 * M_PI / f;
      if (wavelen > lowWavelen) {
        f /= scaling.factor;
      } else if (wavelen >= highWavelen) {
        double smooth = (original / wavelen - scaling.lowFreqFactor) /
                        (scaling.highFreqFactor - scaling.lowFreqFactor);
        f = (1.0 - smooth) * f / scaling.factor + smooth * f;
      }
      break;
    }
    }
    frequencies.push_back(f);
  }
  return frequencies;
}
