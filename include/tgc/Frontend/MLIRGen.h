//===- MLIRGen.h - model configuration → tg forward graph -------*- C++ -*-===//
#ifndef TGC_FRONTEND_MLIRGEN_H
#define TGC_FRONTEND_MLIRGEN_H

#include "tgc/Frontend/ModelConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace tgc {

/// Name of the forward function every front end produces.
inline constexpr llvm::StringLiteral kForwardFuncName = "forward";

/// Builds a module holding
///   func.func @forward(params..., inputs...) -> tensor<f32>
/// in the tg dialect: parameters first, in Hugging Face state-dict order and
/// marked `tg.param`, then the data inputs marked `tg.input`; the result is
/// the mean loss. Ops carry name locations of the module they belong to
/// (e.g. "model.layers.0.self_attn.q_proj").
mlir::OwningOpRef<mlir::ModuleOp> buildForwardModule(mlir::MLIRContext &context,
                                                     const ModelConfig &config);

/// One function of a generation program: `name`, taking `tokens` tokens a
/// call (a prompt chunk, or 1 for a decode step).
struct GenerationStep {
  std::string name;
  int64_t tokens;
};

/// Builds a language model's generation program: for each step,
///   func.func @<name>(params..., input_ids [1, S], positions [1, S],
///                     caches...) -> (logits [1, V], updated caches...)
/// in the tg dialect, with the same parameters as @forward, each layer's key
/// and value caches of `cacheLength` positions (`tg.state`
/// "past_key_values.<layer>.key" / ".value"), RoPE and attention at the
/// given positions, and the LM head on the last position only (its logits
/// before any final soft cap). The model must not be the MLP.
mlir::OwningOpRef<mlir::ModuleOp>
buildGenerationModule(mlir::MLIRContext &context, const ModelConfig &config,
                      int64_t cacheLength,
                      llvm::ArrayRef<GenerationStep> steps);

} // namespace tgc

#endif // TGC_FRONTEND_MLIRGEN_H
