//===- TrainingOptions.h - typed training settings --------------*- C++ -*-===//
//
// The enums of the training settings, one definition used from the model
// file and the flags through the pipelines to the passes (whose options are
// typed with them, so each is parsed once, where it is read).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DIALECT_TG_TRANSFORMS_TRAININGOPTIONS_H
#define TGC_DIALECT_TG_TRANSFORMS_TRAININGOPTIONS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ErrorHandling.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mlir::tg {

/// LoRA adapters (tg-lora), as far as PEFT's LoraConfig changes the graph.
/// Which modules they adapt, and each one's rank and alpha, follow PEFT's
/// rules (LoraSelection in Lora.h).
struct LoraSettings {
  /// The adapters' rank r (of every module rank_pattern does not name); 0:
  /// no adapters.
  int64_t rank = 0;
  double alpha = 8;
  /// Scale by alpha / sqrt(rank) instead of alpha / rank (PEFT's
  /// use_rslora).
  bool rslora = false;
  /// Module names matched as PEFT matches a list of `target_modules`: a
  /// module is targeted when its name equals an entry or ends with "." and
  /// the entry. "all-linear" targets every product but the output layer.
  std::vector<std::string> targets;
  /// `target_modules` written as a string other than "all-linear": a
  /// regular expression that the whole module name matches (PEFT's
  /// re.fullmatch). Used instead of `targets` when not empty.
  std::string targetPattern;
  /// layers_to_transform: list targets select only the modules of these
  /// layers (empty: of every layer). A module's layer is the number that
  /// follows one of `layersPattern` (layers_pattern: "layers", "h") in its
  /// name, or its first numeric component with two components before it
  /// and one after.
  std::vector<int64_t> layers;
  std::vector<std::string> layersPattern;
  /// exclude_modules: names or suffixes as for `targets`, or a regular
  /// expression of whole names (`excludePattern`).
  std::vector<std::string> exclude;
  std::string excludePattern;
  /// rank_pattern and alpha_pattern: a module whose name matches
  /// `(.*\.)?(KEY)` takes the key's rank or alpha instead of `rank` or
  /// `alpha`.
  std::vector<std::pair<std::string, int64_t>> rankPattern;
  std::vector<std::pair<std::string, double>> alphaPattern;

  bool enabled() const { return rank > 0; }
  /// The scale s of the low-rank path of a module of rank `r` and alpha `a`.
  double scale(int64_t r, double a) const {
    return rslora ? a / std::sqrt(static_cast<double>(r))
                  : a / static_cast<double>(r);
  }
  double scale() const { return scale(rank, alpha); }
};

/// The optimizer tg-optimizer appends.
enum class OptimizerKind { SGD, AdamW };

/// What tg-remat does with the values the reverse graph reads.
enum class RematPolicy { None, Layers, Selective, Budget };

/// Fusion: tg-fuse before autodiff, attention over query chunks and
/// elementwise fusion in the lowering (docs/fusion.md).
enum class FusionMode { None, Default };

/// Arithmetic precision of the step (docs/mixed-precision.md): fp32, or
/// bf16-mixed / fp16-mixed (tg-mixed-precision: products on bf16 or f16
/// operands accumulated in f32, everything else and the parameters in f32;
/// fp16-mixed scales the loss dynamically against gradient underflow).
enum class Precision { FP32, BF16Mixed, FP16Mixed };

/// Loss scaling (docs/mixed-precision.md): the loss is multiplied by a
/// scale before the backward pass and the gradients divided by it; a step
/// whose scaled gradients overflow is skipped. Static keeps one scale;
/// dynamic halves it on an overflow and doubles it after clean steps.
enum class LossScaling { None, Static, Dynamic };

/// A loss-scale setting as a user writes it: "none", "dynamic", or a fixed
/// scale (a positive number).
struct LossScaleSetting {
  LossScaling kind = LossScaling::None;
  /// The fixed scale of LossScaling::Static.
  double scale = 0;
};

inline std::optional<LossScaleSetting>
parseLossScaleSetting(llvm::StringRef text) {
  if (text == "none")
    return LossScaleSetting{LossScaling::None, 0};
  if (text == "dynamic")
    return LossScaleSetting{LossScaling::Dynamic, 0};
  double scale = 0;
  if (text.getAsDouble(scale) || !(scale > 0) || !std::isfinite(scale))
    return std::nullopt;
  return LossScaleSetting{LossScaling::Static, scale};
}

inline llvm::StringRef stringifyLossScaling(LossScaling scaling) {
  switch (scaling) {
  case LossScaling::None:
    return "none";
  case LossScaling::Static:
    return "static";
  case LossScaling::Dynamic:
    return "dynamic";
  }
  llvm_unreachable("unknown loss scaling");
}

inline std::optional<Precision> parsePrecision(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<Precision>>(text)
      .Case("fp32", Precision::FP32)
      .Case("bf16-mixed", Precision::BF16Mixed)
      .Case("fp16-mixed", Precision::FP16Mixed)
      .Default(std::nullopt);
}

inline llvm::StringRef stringifyPrecision(Precision precision) {
  switch (precision) {
  case Precision::FP32:
    return "fp32";
  case Precision::BF16Mixed:
    return "bf16-mixed";
  case Precision::FP16Mixed:
    return "fp16-mixed";
  }
  return "fp32";
}

/// A low-precision float type the passes keep values in: mixed precision's
/// product operands and saved activations, frozen weights. None: f32, no
/// change.
enum class LowPrecisionType { None, BF16, F16 };

/// The low-precision type of a mixed precision's values; None for fp32.
inline LowPrecisionType lowPrecisionType(Precision precision) {
  switch (precision) {
  case Precision::FP32:
    return LowPrecisionType::None;
  case Precision::BF16Mixed:
    return LowPrecisionType::BF16;
  case Precision::FP16Mixed:
    return LowPrecisionType::F16;
  }
  llvm_unreachable("unknown precision");
}

inline llvm::StringRef stringifyLowPrecisionType(LowPrecisionType type) {
  switch (type) {
  case LowPrecisionType::None:
    return "none";
  case LowPrecisionType::BF16:
    return "bf16";
  case LowPrecisionType::F16:
    return "f16";
  }
  llvm_unreachable("unknown low-precision type");
}

inline std::optional<FusionMode> parseFusionMode(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<FusionMode>>(text)
      .Case("none", FusionMode::None)
      .Case("default", FusionMode::Default)
      .Default(std::nullopt);
}

inline llvm::StringRef stringifyFusionMode(FusionMode mode) {
  return mode == FusionMode::None ? "none" : "default";
}

inline std::optional<OptimizerKind> parseOptimizerKind(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<OptimizerKind>>(text)
      .Case("sgd", OptimizerKind::SGD)
      .Case("adamw", OptimizerKind::AdamW)
      .Default(std::nullopt);
}

inline llvm::StringRef stringifyOptimizerKind(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::SGD:
    return "sgd";
  case OptimizerKind::AdamW:
    return "adamw";
  }
  llvm_unreachable("unknown optimizer");
}

inline std::optional<RematPolicy> parseRematPolicy(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<RematPolicy>>(text)
      .Case("none", RematPolicy::None)
      .Case("layers", RematPolicy::Layers)
      .Case("selective", RematPolicy::Selective)
      .Case("budget", RematPolicy::Budget)
      .Default(std::nullopt);
}

inline llvm::StringRef stringifyRematPolicy(RematPolicy policy) {
  switch (policy) {
  case RematPolicy::None:
    return "none";
  case RematPolicy::Layers:
    return "layers";
  case RematPolicy::Selective:
    return "selective";
  case RematPolicy::Budget:
    return "budget";
  }
  llvm_unreachable("unknown policy");
}

} // namespace mlir::tg

/// The cl::values of the enums, for flags and pass options.
#define TG_OPTIMIZER_KIND_CL_VALUES                                            \
  ::llvm::cl::values(clEnumValN(::mlir::tg::OptimizerKind::SGD, "sgd",         \
                                "stochastic gradient descent"),                \
                     clEnumValN(::mlir::tg::OptimizerKind::AdamW, "adamw",     \
                                "Adam with decoupled weight decay"))
#define TG_REMAT_POLICY_CL_VALUES                                              \
  ::llvm::cl::values(                                                          \
      clEnumValN(::mlir::tg::RematPolicy::None, "none",                        \
                 "keep every value the reverse graph reads"),                  \
      clEnumValN(::mlir::tg::RematPolicy::Layers, "layers",                    \
                 "checkpoint every layer"),                                    \
      clEnumValN(::mlir::tg::RematPolicy::Selective, "selective",              \
                 "recompute cheap ops, keep matmul outputs"),                  \
      clEnumValN(::mlir::tg::RematPolicy::Budget, "budget",                    \
                 "fewest extra FLOPs within the memory budget"))

#define TG_FUSION_MODE_CL_VALUES                                               \
  ::llvm::cl::values(clEnumValN(::mlir::tg::FusionMode::None, "none",          \
                                "no fusion: every op on its own"),             \
                     clEnumValN(::mlir::tg::FusionMode::Default, "default",    \
                                "fused LM head + loss, attention over query "  \
                                "chunks, elementwise chains"))

#define TG_PRECISION_CL_VALUES                                                 \
  ::llvm::cl::values(                                                          \
      clEnumValN(::mlir::tg::Precision::FP32, "fp32", "f32 everywhere"),       \
      clEnumValN(::mlir::tg::Precision::BF16Mixed, "bf16-mixed",               \
                 "matrix products on bf16 operands, accumulated in f32; "      \
                 "f32 parameters, norms, softmax, loss and optimizer"),        \
      clEnumValN(::mlir::tg::Precision::FP16Mixed, "fp16-mixed",               \
                 "as bf16-mixed with f16 operands, and dynamic loss "          \
                 "scaling"))

#define TG_LOSS_SCALING_CL_VALUES                                              \
  ::llvm::cl::values(                                                          \
      clEnumValN(::mlir::tg::LossScaling::None, "none", "no loss scaling"),    \
      clEnumValN(::mlir::tg::LossScaling::Static, "static",                    \
                 "one scale, the loss_scale state's"),                         \
      clEnumValN(::mlir::tg::LossScaling::Dynamic, "dynamic",                  \
                 "halved on an overflow, doubled after clean steps"))

#define TG_LOW_PRECISION_TYPE_CL_VALUES                                        \
  ::llvm::cl::values(                                                          \
      clEnumValN(::mlir::tg::LowPrecisionType::None, "none",                   \
                 "f32: no change"),                                            \
      clEnumValN(::mlir::tg::LowPrecisionType::BF16, "bf16", "bfloat16"),      \
      clEnumValN(::mlir::tg::LowPrecisionType::F16, "f16", "IEEE half"))

#endif // TGC_DIALECT_TG_TRANSFORMS_TRAININGOPTIONS_H
