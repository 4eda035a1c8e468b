//===- AdapterConfig.cpp - adapter_config.json of a LoRA step -------------===//
//
// The runtime writes the adapter_config.json that PEFT would write for the
// same LoraConfig, so that PEFT (PeftModel.from_pretrained) loads what a
// tgc run saves.
//
//===----------------------------------------------------------------------===//

#include "tgc/Driver/Executable.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Lora.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace tgc;

namespace {

llvm::json::Value stringsOrNull(const std::vector<std::string> &items) {
  if (items.empty())
    return nullptr;
  llvm::json::Array array;
  for (const std::string &item : items)
    array.push_back(item);
  return array;
}

} // namespace

void tgc::describeLora(ModelSummary &summary, std::vector<BufferDesc> &buffers,
                       mlir::func::FuncOp step, const TrainingConfig &training,
                       const ModelConfig *config) {
  const mlir::tg::LoraSettings &lora = training.lora;
  if (!lora.enabled())
    return;
  summary.loraRank = lora.rank;
  // Every product tgc builds for GPT-2 reads a Conv1D weight [in, out].
  summary.loraFanInFanOut = config && config->family == ModelFamily::GPT2;

  // Each adapter's scale, by PEFT's rules for its module (tg-lora checked
  // the settings when it added the adapters).
  llvm::Expected<mlir::tg::LoraSelection> selection =
      mlir::tg::LoraSelection::compile(lora);
  if (!selection)
    llvm::report_fatal_error(llvm::toString(selection.takeError()).c_str());
  for (BufferDesc &b : buffers) {
    llvm::StringRef module = b.name;
    if (!module.consume_back(".lora_A.weight") &&
        !module.consume_back(".lora_B.weight") &&
        !module.consume_back(".lora_embedding_A") &&
        !module.consume_back(".lora_embedding_B"))
      continue;
    llvm::Expected<int64_t> rank = selection->rank(module);
    llvm::Expected<double> alpha = selection->alpha(module);
    if (!rank || !alpha)
      llvm::report_fatal_error("tg-lora admitted conflicting LoRA patterns");
    b.loraScale = lora.scale(*rank, *alpha);
  }

  // PEFT saves the targets as given, but "all-linear" as the names it
  // expanded to: the last component of every adapted module.
  llvm::json::Value targetValue = nullptr;
  if (!lora.targetPattern.empty()) {
    targetValue = lora.targetPattern;
  } else {
    std::vector<std::string> targets;
    if (llvm::is_contained(lora.targets, "all-linear")) {
      for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
        if (auto name = step.getArgAttrOfType<mlir::StringAttr>(
                i, mlir::tg::TGDialect::kParamAttrName)) {
          llvm::StringRef module = name.getValue();
          if (module.consume_back(".lora_A.weight") ||
              module.consume_back(".lora_embedding_A"))
            targets.push_back(mlir::tg::moduleKind(module).str());
        }
    } else {
      targets = lora.targets;
    }
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    targetValue = stringsOrNull(targets);
  }
  llvm::json::Value exclude = lora.excludePattern.empty()
                                  ? stringsOrNull(lora.exclude)
                                  : llvm::json::Value(lora.excludePattern);
  llvm::json::Value layers = nullptr;
  if (!lora.layers.empty()) {
    llvm::json::Array array;
    for (int64_t layer : lora.layers)
      array.push_back(layer);
    layers = std::move(array);
  }
  llvm::json::Value layersPattern =
      lora.layersPattern.size() == 1
          ? llvm::json::Value(lora.layersPattern.front())
          : stringsOrNull(lora.layersPattern);
  llvm::json::Object rankPattern, alphaPattern;
  for (auto &[key, r] : lora.rankPattern)
    rankPattern[key] = r;
  for (auto &[key, a] : lora.alphaPattern)
    alphaPattern[key] = a;

  llvm::json::Object adapter{
      {"alpha_pattern", std::move(alphaPattern)},
      {"auto_mapping", nullptr},
      {"base_model_name_or_path", nullptr},
      {"bias", "none"},
      {"exclude_modules", std::move(exclude)},
      {"fan_in_fan_out", summary.loraFanInFanOut},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"layers_pattern", std::move(layersPattern)},
      {"layers_to_transform", std::move(layers)},
      {"lora_alpha", lora.alpha},
      {"lora_dropout", 0.0},
      {"modules_to_save", nullptr},
      {"peft_type", "LORA"},
      {"r", lora.rank},
      {"rank_pattern", std::move(rankPattern)},
      {"revision", nullptr},
      {"target_modules", std::move(targetValue)},
      {"task_type", config && config->family == ModelFamily::MLP
                        ? llvm::json::Value(nullptr)
                        : llvm::json::Value("CAUSAL_LM")},
      {"use_dora", false},
      {"use_rslora", lora.rslora},
  };
  llvm::raw_string_ostream os(summary.loraConfig);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(adapter))) << "\n";
}
