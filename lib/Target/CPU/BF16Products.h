//===- BF16Products.h - bf16 matmuls on AMX or AVX512-BF16 ------*- C++ -*-===//
#ifndef TGC_LIB_TARGET_CPU_BF16PRODUCTS_H
#define TGC_LIB_TARGET_CPU_BF16PRODUCTS_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

namespace tgc::cpu {
/// Replaces each bf16 x bf16 -> f32 `linalg.matmul` on static memrefs (A
/// read as [M, K] or [K, M], B as [K, N] or [N, K]) with padded, packed
/// operands and AMX tile products.
void emitAMXProducts(mlir::ModuleOp module);

/// Whether `op` is a product emitAMXProducts replaces.
bool isAMXProduct(mlir::Operation *op);
/// Whether `op` is a product emitDotBF16Products replaces.
bool isDotBF16Product(mlir::Operation *op);
/// Whether `op` is a product that the target's emitter replaces: on AMX
/// tiles with `amx` (emitAMXProducts), else on AVX512-BF16 dot products
/// with `bf16Dot` (emitDotBF16Products); such products read their bf16
/// operands as they are.
bool isEmittedProduct(mlir::Operation *op, bool amx, bool bf16Dot);

/// The index (an i64 attribute) of a product's epilogue among those
/// tgc-vectorize-matmuls took (tgc::findEpilogue): on a product, and on the
/// output tile view after which that epilogue is to run on the tile.
constexpr llvm::StringLiteral kEpilogueAttr = "tgc.epilogue";

/// Tiles of a product on `vdpbf16ps`, in pairs of K: MT x NT output tiles
/// (the parallel loop), KT pairs deep cache blocks, MR x NR register tiles
/// (NR a multiple of 16).
struct DotTiles {
  int64_t mt, nt, kt, mr, nr;
};

/// Replaces the same products as emitAMXProducts, where C's rows have unit
/// stride, with AVX512-BF16 dot products (`x86vector.avx512.dot` on 512-bit
/// vectors): B packed as pairs along K, register tiles of C accumulated
/// across blocks of K pairs. `chooseTiles(M, N, K pairs)` sizes each
/// product's tiles. With `takeFills`, the fill of a constant that
/// initialises C just before a product becomes the register tiles' start.
/// A product carrying kEpilogueAttr leaves, after each output tile's last
/// block of K pairs, a view of that tile carrying the attribute: where the
/// caller puts the epilogue, on the tile while it is in cache.
void emitDotBF16Products(
    mlir::ModuleOp module,
    llvm::function_ref<DotTiles(int64_t m, int64_t n, int64_t kPairs)>
        chooseTiles,
    bool takeFills);
} // namespace tgc::cpu

#endif // TGC_LIB_TARGET_CPU_BF16PRODUCTS_H
