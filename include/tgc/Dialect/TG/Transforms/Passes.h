//===- Passes.h - tg dialect passes -----------------------------*- C++ -*-===//
#ifndef TGC_DIALECT_TG_TRANSFORMS_PASSES_H
#define TGC_DIALECT_TG_TRANSFORMS_PASSES_H

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tg {

#define GEN_PASS_DECL
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_PASSES_H
