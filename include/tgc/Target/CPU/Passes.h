//===- Passes.h - the CPU backend's passes ----------------------*- C++ -*-===//
#ifndef TGC_TARGET_CPU_PASSES_H
#define TGC_TARGET_CPU_PASSES_H

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Target/CPU/CPUTarget.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace tgc::cpu {

#define GEN_PASS_DECL
#include "tgc/Target/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tgc/Target/CPU/Passes.h.inc"

/// Whether tgc-vectorize-matmuls tiles `op` (a matmul, or a batch matmul of
/// a layout it schedules, on static f32 buffers, or a product of bf16/f16
/// operands with an f32 output, widened to f32 or on AVX512-BF16 dot
/// products; not one on AMX tiles, with `amx`) and, with fill-tiles, does
/// its neighbours (tgc::findAccumulatorInit, tgc::findEpilogue) inside each
/// output tile.
bool fusesIntoProductTiles(mlir::Operation *op, bool amx);

/// Whether, with fill-tiles, `op`'s tiles read an operand in the heads'
/// layout in place (tgc::findHeadsOperand) and write its output into a new
/// layout (tgc::findOutputTranspose): f32 products only (a widened
/// product's tiles read and write its f32 copies).
bool readsHeadsInPlace(mlir::Operation *op);

} // namespace tgc::cpu

#endif // TGC_TARGET_CPU_PASSES_H
