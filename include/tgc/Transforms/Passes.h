//===- Passes.h - tgc passes on the lowered step ----------------*- C++ -*-===//
//
// Elementwise fusion on linalg, the arena plan and its lowering, and the C
// entry point: passes on the step after tg → linalg that are not
// conversions (include/tgc/Transforms/Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TRANSFORMS_PASSES_H
#define TGC_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tg {

#define GEN_PASS_DECL
#include "tgc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tgc/Transforms/Passes.h.inc"

} // namespace mlir::tg

#endif // TGC_TRANSFORMS_PASSES_H
