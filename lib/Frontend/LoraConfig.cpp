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

void tgc::config::readLora(ConfigReader &r, mlir::tg::LoraSettings &lora) {
  if (auto v = r.integer("r", true, 1))
    lora.rank = *v;
  if (auto v = r.number("lora_alpha", false))
    lora.alpha = *v;
  if (auto v = r.boolean("use_rslora"))
    lora.rslora = *v;
  if (const Value *targets = r.value("target_modules", false)) {
    if (std::optional<llvm::StringRef> s = targets->getAsString()) {
      if (*s == "all-linear")
        lora.targets = {s->str()};
      else
        r.error("target_modules",
                "a regular expression (\"" + *s +
                    "\") is not supported: list the module names, e.g. "
                    "[\"q_proj\", \"v_proj\"], or write \"all-linear\"");
    } else if (const llvm::json::Array *list = targets->getAsArray()) {
      for (const Value &entry : *list) {
        std::optional<llvm::StringRef> name = entry.getAsString();
        if (!name || name->empty()) {
          r.error("target_modules",
                  "expected a list of module names, got an entry " +
                      describe(entry));
          return;
        }
        lora.targets.push_back(name->str());
      }
      if (lora.targets.empty())
        r.error("target_modules", "the list is empty");
    } else {
      r.error("target_modules",
              "expected a list of module names, got " + describe(*targets));
    }
  }
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
  // Settings that select other layers or ranks per layer.
  for (llvm::StringRef key :
       {"layers_to_transform", "layers_pattern", "modules_to_save",
        "exclude_modules", "layer_replication", "target_parameters"})
    if (r.has(key))
      r.error(key, "is not supported (remove it or write null)");
  for (llvm::StringRef key : {"rank_pattern", "alpha_pattern"})
    if (const Value *v = r.value(key, false)) {
      const llvm::json::Object *o = v->getAsObject();
      if (!o || !o->empty())
        r.error(key, "per-layer ranks and alphas are not supported (write "
                     "{})");
    }
}
