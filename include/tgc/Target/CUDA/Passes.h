//===- Passes.h - the CUDA backend's passes ---------------------*- C++ -*-===//
#ifndef TGC_TARGET_CUDA_PASSES_H
#define TGC_TARGET_CUDA_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace tgc::cuda {

#define GEN_PASS_DECL
#include "tgc/Target/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tgc/Target/CUDA/Passes.h.inc"

} // namespace tgc::cuda

#endif // TGC_TARGET_CUDA_PASSES_H
