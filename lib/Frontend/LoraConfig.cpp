//===- LoraConfig.cpp - the training object's "lora" ----------------------===//
//
// Reads PEFT's LoraConfig keys, as adapter_config.json writes them, so a
// user's config carries over. Keys that would change the math in ways tgc
// does not model are refused by name.
//
//===----------------------------------------------------------------------===//

#include "ConfigReader.h"
#include "tgc/Frontend/ModelConfig.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <type_traits>

using namespace tgc;
using namespace tgc::config;

std::vector<std::string> tgc::defaultLoraTargets(llvm::StringRef modelType) {
  // PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING; the families
  // it does not list follow the llama lineage they are built on.
  return llvm::StringSwitch<std::vector<std::string>>(modelType)
      .Case("gpt2", {"c_attn"})
      .Case("gpt_neox", {"query_key_value"})
      .Case("phi3", {"qkv_proj"})
      .Case("mlp", {})
      .Default({"q_proj", "v_proj"});
}

namespace {

/// A list of names, or (where `pattern` is given) one string: PEFT's
/// target_modules and exclude_modules. Returns false after an error.
bool readNames(ConfigReader &r, llvm::StringRef key,
               std::vector<std::string> &names, std::string *pattern) {
  const Value *v = r.value(key, false);
  if (!v)
    return true;
  if (std::optional<llvm::StringRef> s = v->getAsString()) {
    if (s->empty()) {
      r.error(key, "an empty regular expression");
      return false;
    }
    if (*s == "all-linear" && key == "target_modules")
      names = {s->str()};
    else
      *pattern = s->str();
    return true;
  }
  const llvm::json::Array *list = v->getAsArray();
  if (!list) {
    r.error(key, "expected a list of module names or a regular expression, "
                 "got " +
                     describe(*v));
    return false;
  }
  for (const Value &entry : *list) {
    std::optional<llvm::StringRef> name = entry.getAsString();
    if (!name || name->empty()) {
      r.error(key, "expected a list of module names, got an entry " +
                       describe(entry));
      return false;
    }
    names.push_back(name->str());
  }
  return true;
}

/// rank_pattern / alpha_pattern: an object of keys (regular expressions of
/// module names) to ranks or alphas, in key order (llvm::json keeps no file
/// order; keys that disagree on a module are refused, so order is moot).
template <typename T>
void readPattern(ConfigReader &r, llvm::StringRef key,
                 std::vector<std::pair<std::string, T>> &into) {
  const Value *v = r.value(key, false);
  if (!v)
    return;
  const llvm::json::Object *o = v->getAsObject();
  if (!o) {
    r.error(key, "expected an object of module patterns, got " + describe(*v));
    return;
  }
  std::vector<std::string> keys;
  for (const auto &member : *o)
    keys.push_back(member.first.str());
  std::sort(keys.begin(), keys.end());
  for (const std::string &k : keys) {
    const Value &value = *o->get(k);
    std::string where = (key + "." + k).str();
    if constexpr (std::is_integral_v<T>) {
      std::optional<int64_t> i = value.getAsInteger();
      if (!i || *i < 1) {
        r.error(where, "expected a positive rank, got " + describe(value));
        return;
      }
      into.emplace_back(k, *i);
    } else {
      std::optional<double> d = value.getAsNumber();
      if (!d || !std::isfinite(*d) || *d <= 0) {
        r.error(where, "expected a positive number, got " + describe(value));
        return;
      }
      into.emplace_back(k, *d);
    }
  }
}

} // namespace

void tgc::config::readLora(ConfigReader &r, mlir::tg::LoraSettings &lora) {
  if (auto v = r.integer("r", true, 1))
    lora.rank = *v;
  if (auto v = r.number("lora_alpha", false))
    lora.alpha = *v;
  if (auto v = r.boolean("use_rslora"))
    lora.rslora = *v;
  {
    std::vector<std::string> targets;
    std::string pattern;
    if (!readNames(r, "target_modules", targets, &pattern))
      return;
    if (r.has("target_modules") && targets.empty() && pattern.empty())
      r.error("target_modules", "the list is empty");
    if (r.has("target_modules")) {
      lora.targets = std::move(targets);
      lora.targetPattern = std::move(pattern);
    }
  }
  if (!readNames(r, "exclude_modules", lora.exclude, &lora.excludePattern))
    return;
  if (const Value *layers = r.value("layers_to_transform", false)) {
    auto layer = [&](const Value &v) {
      std::optional<int64_t> i = v.getAsInteger();
      if (!i || *i < 0)
        r.error("layers_to_transform",
                "expected a layer index or a list of them, got " + describe(v));
      else
        lora.layers.push_back(*i);
    };
    if (const llvm::json::Array *list = layers->getAsArray())
      for (const Value &entry : *list)
        layer(entry);
    else
      layer(*layers);
  }
  if (r.has("layers_pattern")) {
    std::string pattern;
    if (!readNames(r, "layers_pattern", lora.layersPattern, &pattern))
      return;
    if (!pattern.empty())
      lora.layersPattern = {pattern};
  }
  readPattern(r, "rank_pattern", lora.rankPattern);
  readPattern(r, "alpha_pattern", lora.alphaPattern);
  if (auto v = r.number("lora_dropout", false, /*positive=*/false); v && *v)
    r.error("lora_dropout",
            llvm::formatv("{0} is not supported: tgc trains without dropout "
                          "(write 0)",
                          llvm::format("%g", *v)));
  if (auto v = r.string("bias", false); v && *v != "none")
    r.error("bias", "\"" + *v +
                        "\" is not supported: the adapters train no bias "
                        "(write \"none\")");
  if (auto v = r.boolean("use_dora"); v && *v)
    r.error("use_dora", "DoRA is not supported (write false)");
  if (const Value *init = r.value("init_lora_weights", false);
      init && init->getAsBoolean() != std::optional<bool>(true))
    r.error("init_lora_weights",
            "only true (PEFT's default: A Kaiming-uniform, B zero) is "
            "supported, got " +
                describe(*init));
  // Settings that train or reshape other modules, or change the adapters'
  // math (newer PEFT keys): refused unless off.
  for (llvm::StringRef key :
       {"modules_to_save", "layer_replication", "target_parameters",
        "trainable_token_indices", "alora_invocation_tokens"})
    if (const Value *v = r.value(key, false);
        v && !(v->getAsArray() && v->getAsArray()->empty()))
      r.error(key, "is not supported (remove it or write null)");
  for (llvm::StringRef key : {"lora_bias", "use_qalora"})
    if (auto v = r.boolean(key); v && *v)
      r.error(key, "is not supported (write false)");
}

llvm::Expected<mlir::tg::LoraSettings>
tgc::loadLoraConfig(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(
        llvm::formatv("{0}: cannot read LoRA config: {1}", path,
                      buffer.getError().message()));
  llvm::Expected<Value> json = parseJSONObject(
      (*buffer)->getBuffer(), path, "(PEFT's adapter_config.json)");
  if (!json)
    return json.takeError();
  const Object *root = json->getAsObject();
  ConfigReader reader(path, *root);
  if (auto type = reader.string("peft_type", false); type && *type != "LORA")
    reader.error("peft_type", "\"" + *type + "\" is not LoRA");
  mlir::tg::LoraSettings lora;
  readLora(reader, lora);
  if (reader.failed())
    return llvm::createStringError(*reader.getError());
  return lora;
}
