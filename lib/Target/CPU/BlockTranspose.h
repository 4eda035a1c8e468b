//===- BlockTranspose.h - matrices transposed in register blocks -*- C++ -*-===//
//
// Shared by tgc-vectorize-transposes (f32 matrices) and the AVX512-BF16
// products' packing (a bf16 weight's pairs along K, 32 bits each).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_LIB_TARGET_CPU_BLOCKTRANSPOSE_H
#define TGC_LIB_TARGET_CPU_BLOCKTRANSPOSE_H

#include "mlir/IR/Builders.h"

namespace tgc::cpu {

/// The side of a register block: sixteen rows of sixteen 32-bit words, one
/// 64-byte line each (the shape vector.transpose's shuffle lowering takes).
constexpr int64_t kTransposeBlock = 16;

/// dst[c, r] = src[r, c] over the words of src's first `rows` x `cols`
/// (multiples of kTransposeBlock), a word being one f32 or, with
/// `pairs`, two adjacent 16-bit elements (src [R, 2C], dst [C, 2R]): an
/// scf.forall over strips of sixteen source rows, each block read by rows,
/// transposed in registers by unpacks and shuffles, and written by rows.
void transposeWholeBlocks(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value src, mlir::Value dst, int64_t rows,
                          int64_t cols, bool pairs);

} // namespace tgc::cpu

#endif // TGC_LIB_TARGET_CPU_BLOCKTRANSPOSE_H
