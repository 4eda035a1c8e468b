//===- Tiling.h - tile sizes of the neutral ops from budgets ----*- C++ -*-===//
//
// The arithmetic a target's tile-choosing pass shares with other targets:
// how many attention positions or norm rows fit a budget of bytes, and the
// chunks of an expert's rows. Which
// budget, and whether to tile at all, is each target's own choice
// (tgc-cpu-choose-tiles, tgc-gpu-choose-tiles); the result is a
// `tg.tiling` attribute that convert-tg-to-linalg follows.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TARGET_TILING_H
#define TGC_TARGET_TILING_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>

namespace tgc {

/// The shape facts of a tg.attention or tg.attention_grad that tiles
/// depend on.
struct AttentionShape {
  int64_t batch, queries, keys, keyValueHeads, groupSize, elementBytes;
  /// The shape of `op` (a tg.attention or tg.attention_grad).
  static AttentionShape of(mlir::Operation *op);
  int64_t positions() const { return queries > keys ? queries : keys; }
};

/// Whether a target tiles `op`'s attention: a tg.attention_grad, or a
/// tg.attention other than one over a key/value cache (`positions`: one
/// query tile already).
bool isTiledAttention(mlir::Operation *op);

/// The tiling of attention op `op` for budgets of `scoreTileBytes` per
/// batched score tile and `taskBytes` per task (0: no batched tiles / no
/// tasks), the gradient's products reading score tiles through transposed
/// maps; null where `op` is not tiled (isTiledAttention) or both are 0.
mlir::Attribute attentionTiling(mlir::Operation *op, int64_t scoreTileBytes,
                                int64_t taskBytes);

/// Positions per batched tile whose scores, [B·Hkv, T·G, T] over all
/// sequences and heads, take at most `scoreBytes`: a multiple of 16 when
/// above 16, at least 16, at most the sequence.
int64_t batchedTilePositions(const AttentionShape &shape, int64_t scoreBytes);

/// Positions per tile of one task (a sequence and key/value head) whose
/// scores, [T·G, T], take at most `taskBytes`; rounded as above.
int64_t taskTilePositions(const AttentionShape &shape, int64_t taskBytes);

/// Rows per task of a norm (or its gradient) whose rows of its first
/// operand take at most `taskBytes` (at least one row); 0 when the norm
/// has no rows to split (rank below 2, or empty).
int64_t normRowsPerTask(mlir::Operation *norm, int64_t taskBytes);

/// Sets `#tg.row_chunks<rows = chunkRows, tail_rows = tailRows>` on every
/// tg.grouped_matmul and tg.grouped_weight_grad under `root`: an expert's
/// rows in static chunks. Unless 1 <= tailRows <= chunkRows, sets nothing
/// and reports an error on `root` naming `pass`.
mlir::LogicalResult setExpertRowChunks(mlir::Operation *root,
                                       llvm::StringRef pass, int64_t chunkRows,
                                       int64_t tailRows);

} // namespace tgc

#endif // TGC_TARGET_TILING_H
