//===- Lora.h - low-rank adapters beside linear layers ----------*- C++ -*-===//
//
// The C++ side of `tg-lora`, shared with the driver (which reports bad
// settings with their flags before building the step).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_LORA_H
#define TGC_DIALECT_TG_TRANSFORMS_LORA_H

#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/Error.h"

namespace mlir::tg {

/// The name of the module whose weight a parameter is ("...q_proj" for
/// "...q_proj.weight"), or "" when `param` is not a ".weight".
StringRef moduleOfWeight(StringRef param);

/// The last component of a module name ("q_proj" for
/// "model.layers.0.self_attn.q_proj"): what PEFT's all-linear expands to.
StringRef moduleKind(StringRef module);

/// Whether `module` is one of `settings.targets` (PEFT's suffix rule).
bool isLoraTarget(StringRef module, const LoraSettings &settings);

/// Adds adapters beside every targeted product of `forward` whose weight is
/// a parameter, and freezes every other parameter. Fails, changing
/// nothing, when the settings are out of range, a target matches no module
/// or the graph has no product to adapt; the message names the culprit.
llvm::Error addLoraAdapters(func::FuncOp forward, const LoraSettings &settings);

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_LORA_H
