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

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace tgc;

void tgc::describeLora(ModelSummary &summary, mlir::func::FuncOp step,
                       const TrainingConfig &training,
                       const ModelConfig *config) {
  const mlir::tg::LoraSettings &lora = training.lora;
  if (!lora.enabled())
    return;
  summary.loraRank = lora.rank;
  summary.loraScale = lora.scale();
  // Every product tgc builds for GPT-2 reads a Conv1D weight [in, out].
  summary.loraFanInFanOut = config && config->family == ModelFamily::GPT2;

  // PEFT saves the targets as given, but "all-linear" as the names it
  // expanded to: the last component of every adapted module.
  std::vector<std::string> targets;
  if (llvm::is_contained(lora.targets, "all-linear")) {
    for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
      if (auto name = step.getArgAttrOfType<mlir::StringAttr>(
              i, mlir::tg::TGDialect::kParamAttrName)) {
        llvm::StringRef module = name.getValue();
        if (module.consume_back(".lora_A.weight"))
          targets.push_back(mlir::tg::moduleKind(module).str());
      }
  } else {
    targets = lora.targets;
  }
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());

  llvm::json::Array targetArray;
  for (const std::string &t : targets)
    targetArray.push_back(t);
  llvm::json::Object adapter{
      {"alpha_pattern", llvm::json::Object()},
      {"auto_mapping", nullptr},
      {"base_model_name_or_path", nullptr},
      {"bias", "none"},
      {"fan_in_fan_out", summary.loraFanInFanOut},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"layers_pattern", nullptr},
      {"layers_to_transform", nullptr},
      {"lora_alpha", lora.alpha},
      {"lora_dropout", 0.0},
      {"modules_to_save", nullptr},
      {"peft_type", "LORA"},
      {"r", lora.rank},
      {"rank_pattern", llvm::json::Object()},
      {"revision", nullptr},
      {"target_modules", std::move(targetArray)},
      {"task_type", config && config->family == ModelFamily::MLP
                        ? llvm::json::Value(nullptr)
                        : llvm::json::Value("CAUSAL_LM")},
      {"use_dora", false},
      {"use_rslora", lora.rslora},
  };
  llvm::raw_string_ostream os(summary.loraConfig);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(adapter))) << "\n";
}
