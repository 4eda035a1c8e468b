//===- ModelConfig.cpp - reading model description files ------------------===//
//
// Every error names the file and the key; unknown keys are ignored because
// Hugging Face configs carry many that do not change the graph.
//
//===----------------------------------------------------------------------===//

#include "tgc/Frontend/ModelConfig.h"
#include "ConfigReader.h"
#include "tgc/Support/NamePattern.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

#include <cmath>

using namespace tgc;
using namespace tgc::config;

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

std::optional<DType> parseDTypeName(llvm::StringRef name) {
  if (name == "f32" || name == "float32")
    return DType::F32;
  if (name == "bf16" || name == "bfloat16")
    return DType::BF16;
  if (name == "f16" || name == "float16")
    return DType::F16;
  return std::nullopt;
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
  for (auto [key, field] : {std::pair("dtype", &t.dtype),
                             std::pair("frozen_dtype", &t.frozenDtype)})
    if (auto name = r.string(key, false)) {
      if (std::optional<DType> dtype = parseDTypeName(*name))
        *field = *dtype;
      else
        r.error(key, "expected \"f32\", \"bf16\" or \"f16\", got \"" +
                         *name + "\"");
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
  if (auto pattern = r.string("freeze", false)) {
    if (llvm::Expected<NamePattern> re = NamePattern::compile(*pattern))
      t.freeze = *pattern;
    else
      r.error("freeze", llvm::toString(re.takeError()));
  }
  if (const llvm::json::Value *v = r.value("lora", false)) {
    if (const llvm::json::Object *obj = v->getAsObject()) {
      ConfigReader sub(r.getPath(), *obj, r.getPrefix().str() + "lora.");
      readLora(sub, t.lora);
      r.adoptError(sub);
    } else {
      r.error("lora", "expected an object (PEFT's LoraConfig keys), got " +
                          describe(*v));
    }
  }
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

} // namespace

std::string tgc::config::formatParseError(llvm::StringRef path,
                                          llvm::Error error) {
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
  if (c.training.frozenDtype != DType::F32) {
    if (c.training.freeze.empty() && !c.training.lora.enabled())
      return llvm::createStringError(llvm::formatv(
          "{0}: frozen_dtype {1} stores the frozen weights narrower, but "
          "nothing is frozen (give freeze or lora)",
          c.path, stringifyDType(c.training.frozenDtype)));
    if (c.training.dtype != DType::F32)
      return llvm::createStringError(llvm::formatv(
          "{0}: frozen_dtype {1} needs dtype f32, not {2}", c.path,
          stringifyDType(c.training.frozenDtype),
          stringifyDType(c.training.dtype)));
  }
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

llvm::Expected<Value> tgc::config::parseJSONObject(llvm::StringRef text,
                                                   llvm::StringRef path,
                                                   llvm::StringRef expected) {
  // llvm::json::parse recurses once per level: refuse deep nesting first.
  if (llvm::Error err = checkJSONNesting(text, path))
    return std::move(err);
  llvm::Expected<Value> json = llvm::json::parse(text);
  if (!json)
    return llvm::createStringError(formatParseError(path, json.takeError()));
  if (!json->getAsObject())
    return llvm::createStringError(
        llvm::formatv("{0}: expected a JSON object {1}, got {2}", path,
                      expected, describe(*json)));
  return json;
}

llvm::Expected<ModelConfig> tgc::parseModelConfig(llvm::StringRef text,
                                                  llvm::StringRef path) {
  llvm::Expected<Value> json = parseJSONObject(text, path, "at the top level");
  if (!json)
    return json.takeError();
  const Object *root = json->getAsObject();

  ModelConfig config;
  config.path = path.str();
  ConfigReader reader(path, *root);
  std::optional<std::string> type = reader.string("model_type", true);
  if (type) {
    config.modelType = *type;
    if (*type == "llama" || *type == "mistral" || *type == "qwen2" ||
        *type == "qwen3" || *type == "phi3" || *type == "gemma" ||
        *type == "gemma2" || *type == "gemma3_text" ||
        *type == "olmo2" || *type == "mixtral" || *type == "qwen2_moe" ||
        *type == "qwen3_moe" || *type == "olmoe")
      readLlama(reader, config);
    else if (*type == "gpt2")
      readGPT2(reader, config);
    else if (*type == "gpt_neox")
      readGPTNeoX(reader, config);
    else if (*type == "mlp")
      readMLP(reader, config);
    else if (*type == "gemma3")
      reader.error("model_type",
                   "\"gemma3\" is Gemma 3's multimodal model "
                   "(Gemma3ForConditionalGeneration); tgc builds its "
                   "language model from the config's text_config "
                   "(model_type \"gemma3_text\")");
    else
      reader.error("model_type", "unknown model type \"" + *type +
                                     "\" (expected llama, mistral, qwen2, "
                                     "qwen3, phi3, gemma, gemma2, "
                                     "gemma3_text, olmo2, mixtral, "
                                     "qwen2_moe, qwen3_moe, olmoe, gpt2, "
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

