//===- Lora.h - low-rank adapters beside linear layers ----------*- C++ -*-===//
//
// The C++ side of `tg-lora`, shared with the driver (which reports bad
// settings with their flags before building the step).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_LORA_H
#define TGC_DIALECT_TG_TRANSFORMS_LORA_H

#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include "tgc/Support/NamePattern.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/Error.h"

#include <optional>

namespace mlir::tg {

/// The name of the module whose weight a parameter is ("...q_proj" for
/// "...q_proj.weight"), or "" when `param` is not a ".weight".
StringRef moduleOfWeight(StringRef param);

/// The last component of a module name ("q_proj" for
/// "model.layers.0.self_attn.q_proj"): what PEFT's all-linear expands to.
StringRef moduleKind(StringRef module);

/// Whether `module` is one of `names` as PEFT matches a list of
/// target_modules or exclude_modules: equal to an entry, or ending with "."
/// and it.
bool isNamedModule(StringRef module, ArrayRef<std::string> names);

/// The layer index of a module name as PEFT reads it for
/// layers_to_transform: the number that follows one of `layersPattern`
/// ("model.layers.3.mlp.up_proj" → 3 for "layers"), or without patterns the
/// first numeric component with two components before it and one after;
/// nullopt when there is none.
std::optional<int64_t> loraLayerIndex(StringRef module,
                                      ArrayRef<std::string> layersPattern);

/// PEFT's choice of the modules LoRA adapts and of each one's rank and
/// alpha (check_target_module_exists, get_pattern_key), with the settings'
/// regular expressions compiled once.
class LoraSelection {
public:
  /// Fails on a malformed pattern or a combination PEFT refuses
  /// (layers_to_transform with a string target_modules, layers_pattern
  /// without layers_to_transform); the message names the setting.
  static llvm::Expected<LoraSelection> compile(const LoraSettings &settings);

  /// Whether exclude_modules removes `module`.
  bool excludes(StringRef module) const;
  /// Whether target_modules (with layers_to_transform) names `module`.
  /// "all-linear" names none: it selects by what a module is.
  bool names(StringRef module) const;
  /// `module`'s rank and alpha (rank_pattern, alpha_pattern); fails when
  /// two keys that match it give different values.
  llvm::Expected<int64_t> rank(StringRef module) const;
  llvm::Expected<double> alpha(StringRef module) const;
  /// The pattern keys that match `module` (to find the unused ones).
  SmallVector<StringRef> rankKeysOf(StringRef module) const;
  SmallVector<StringRef> alphaKeysOf(StringRef module) const;

  const LoraSettings &settings() const { return lora; }

private:
  struct Keyed {
    std::string key;
    tgc::NamePattern pattern;
    double value;
  };
  /// The keys of `keyed` that match `module`, in order.
  static SmallVector<StringRef> matching(ArrayRef<Keyed> keyed,
                                         StringRef module);
  /// The value the keys of `keyed` that match `module` give it, `fallback`
  /// when none does; fails when they disagree.
  static llvm::Expected<double> valueOf(ArrayRef<Keyed> keyed, StringRef what,
                                        StringRef module, double fallback);

  LoraSettings lora;
  std::optional<tgc::NamePattern> target, exclude;
  std::vector<Keyed> ranks, alphas;
};

/// Adds adapters beside every targeted product of `forward` whose weight is
/// a parameter, and freezes every other parameter. Fails, changing
/// nothing, when the settings are out of range, a target matches no module
/// or the graph has no product to adapt; the message names the culprit.
llvm::Error addLoraAdapters(func::FuncOp forward, const LoraSettings &settings);

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_LORA_H
