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

} // namespace tgc

#endif // TGC_FRONTEND_MLIRGEN_H
