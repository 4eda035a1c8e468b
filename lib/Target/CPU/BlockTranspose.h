//===- BlockTranspose.h - matrices transposed in register blocks -*- C++
//-*-===//
//
// Shared by tgc-vectorize-transposes (f32 matrices, and bf16/f16 ones
// widened to f32 as they are transposed) and the AVX512-BF16 products'
// packing (a bf16 weight's pairs along K, 32 bits each).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_LIB_TARGET_CPU_BLOCKTRANSPOSE_H
#define TGC_LIB_TARGET_CPU_BLOCKTRANSPOSE_H

#include "mlir/IR/Builders.h"

namespace tgc::cpu {

/// The side of a register block: sixteen rows of sixteen 32-bit words, one
/// 64-byte line each (the shape vector.transpose's shuffle lowering takes).
constexpr int64_t kTransposeBlock = 16;

/// How the elements of a block are transposed: one f32 each; pairs of
/// adjacent 16-bit elements as one 32-bit word (src [R, 2C], dst [C, 2R]);
/// or bf16/f16 elements widened to f32 as they are read (dst f32).
enum class BlockElements { F32, Pairs, Widened };

/// dst[c, r] = src[r, c] over the words of src's first `rows` x `cols`
/// (multiples of kTransposeBlock), words as `elements` says: an scf.forall
/// over strips of sixteen source rows, each block read by rows, transposed
/// in registers by unpacks and shuffles, and written by rows.
void transposeWholeBlocks(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value src, mlir::Value dst, int64_t rows,
                          int64_t cols, BlockElements elements);

} // namespace tgc::cpu

#endif // TGC_LIB_TARGET_CPU_BLOCKTRANSPOSE_H
