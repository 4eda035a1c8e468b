//===- Passes.h - the CPU backend's passes ----------------------*- C++ -*-===//
#ifndef TGC_TARGET_CPU_PASSES_H
#define TGC_TARGET_CPU_PASSES_H

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
/// a layout it schedules, on static f32 buffers, or on bf16/f16 operands
/// that it widens to f32 for a target without AMX (`amx`) or AVX512-BF16
/// dot products (`bf16Dot`) for them) and, with fill-tiles, does its
/// neighbours (tgc::findAccumulatorInit, tgc::findEpilogue) inside each
/// output tile.
bool fusesIntoProductTiles(mlir::Operation *op, bool amx, bool bf16Dot);

/// Whether, with fill-tiles, `op`'s tiles read an operand in the heads'
/// layout in place (tgc::findHeadsOperand) and write its output into a new
/// layout (tgc::findOutputTranspose): f32 products only (a widened
/// product's tiles read and write its f32 copies).
bool readsHeadsInPlace(mlir::Operation *op);

/// Whether tgc-vectorize-matmuls, with fill-tiles, does the fill that
/// zeroes `op`'s output inside its tiles: the f32 products above, bf16 ones
/// on AVX512-BF16 dot products and products widened to f32; not the
/// products that run on AMX tiles (with `amx`).
bool takesAccumulatorFill(mlir::Operation *op, bool amx);

} // namespace tgc::cpu

#endif // TGC_TARGET_CPU_PASSES_H
