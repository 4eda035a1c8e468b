//===- AMXProducts.h - bf16 matmuls on AMX tiles ----------------*- C++ -*-===//
#ifndef TGC_LIB_TARGET_CPU_AMXPRODUCTS_H
#define TGC_LIB_TARGET_CPU_AMXPRODUCTS_H

#include "mlir/IR/BuiltinOps.h"

namespace tgc::cpu {
/// Replaces each bf16 x bf16 -> f32 `linalg.matmul` on static memrefs (A
/// read as [M, K] or [K, M], B as [K, N] or [N, K]) with padded, packed
/// operands and AMX tile products.
void emitAMXProducts(mlir::ModuleOp module);
} // namespace tgc::cpu

#endif // TGC_LIB_TARGET_CPU_AMXPRODUCTS_H
