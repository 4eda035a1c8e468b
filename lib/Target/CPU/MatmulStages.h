//===- MatmulStages.h - the stages of tgc-vectorize-matmuls -----*- C++ -*-===//
//
// tgc-vectorize-matmuls (VectorizeMatmuls.cpp) runs, in order: the operand
// preparation of narrow products (ProductOperands.cpp), the fusion of
// fills, epilogues, transposed writes and head-major reads into the product
// tiles (TileFusion.cpp), and the transform schedules that tile, vectorise
// and lower the products (MatmulSchedules.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_LIB_TARGET_CPU_MATMULSTAGES_H
#define TGC_LIB_TARGET_CPU_MATMULSTAGES_H

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Target/CPU/TileModel.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>

namespace tgc::cpu::matmuls {

using namespace mlir;

/// Each scheduled product's #tg.matmul_tiling.
constexpr llvm::StringLiteral kScheduleAttr = tg::TGDialect::kTilingAttrName;

/// The typed attribute of `tiles`, and the tiles it holds.
tg::MatmulTilingAttr tilingAttr(MLIRContext *ctx, const MatmulTiles &tiles);
MatmulTiles tilesOf(tg::MatmulTilingAttr attr);

/// Before the schedules: each matmul of at most `maxRows` rows (f32
/// operands, or narrow ones of one type, widened as read) whose right-hand
/// operand is a transposed copy of a matrix W (read only by it) reads W in
/// place, as a linalg.generic (MatrixVectorProducts.cpp): no copy, no
/// packing, W's rows streamed once.
void readTransposedOperandsInPlace(ModuleOp module, int64_t maxRows);

/// Before the bf16 products are emitted (AMX, AVX512-BF16): a bf16 matmul
/// whose right-hand operand is such a transposed copy of W reads W as
/// [N, K] through its indexing maps instead, so that the packing makes
/// its pairs along K from W's rows (32-bit words) in one pass.
void readNarrowTransposedOperands(ModuleOp module);

/// Phase 1: parallel output tiles (and batch entries). The schedules match
/// the products of each configuration by their #tg.matmul_tiling.
OwningOpRef<ModuleOp>
forallSchedule(MLIRContext *ctx,
               const std::map<std::string, MatmulTiles> &configs);

/// Phase 2, on 2-D matmuls inside the output tiles: K cache tile, MR x NR
/// register tiles. The j loop is peeled and its remainder tiled by whole
/// vectors (peeled again: only the last < lanes columns stay partial); the
/// i loop is peeled and its remainder done a row at a time. The unit K loop
/// comes last, so every variant has the accumulators' loop innermost.
OwningOpRef<ModuleOp>
registerSchedule(MLIRContext *ctx,
                 const std::map<std::string, MatmulTiles> &configs,
                 int64_t lanes);

/// Phase 4, after vectorisation: canonical transfers and loop-invariant
/// code out of the tile loops; then (hoistAccumulators) the accumulators
/// out of the K loop.
OwningOpRef<ModuleOp> cleanupSchedule(MLIRContext *ctx);

/// The accumulators of each matmul's tile loops read once before its K loop
/// and written once after it. Per loop nest (an output tile's scf.forall, or
/// the outermost loop of a nest without one: a small matmul, a chunk loop's
/// tiles), not per function: upstream's hoisting restarts its walk of the
/// whole root after every hoist, which over a step's function was quadratic
/// in its matmuls.
void hoistAccumulators(ModuleOp module);

/// What upstream's hoisting leaves: a register tile's accumulators read and
/// written on every iteration of its K loop when their buffer also has
/// views (the output tile that a fill or an epilogue writes inside the
/// product's tiles), which upstream refuses. A read and a write of the same
/// vector at the same loop-invariant place of a buffer made by this step
/// (an alloc: no other buffer aliases it), which nothing else in the loop
/// touches, become a value carried by the loop: read before it, written
/// after it.
void hoistTileAccumulators(ModuleOp module);

/// Phase 5: the contractions as FMAs. Each greedy set apart: lower_masks or
/// the vector lowerings in one set with canonicalisation ping-pong on
/// constant masks and 1-row tiles (memory without bound).
OwningOpRef<ModuleOp> loweringSchedule(MLIRContext *ctx);

/// Phase 3: vectorises every scheduled matmul tile. Static tiles vectorise
/// as they are; a dynamic size (a partial vector of columns, or rows where
/// nothing was peeled) is masked up to its bound: one vector of `lanes`,
/// or MR rows (its #tg.matmul_tiling's).
LogicalResult vectorizeTiles(ModuleOp module, int64_t lanes);

/// Products of bf16/f16 operands with an f32 accumulator: each narrow
/// operand is widened into an f32 buffer once (planned in the arena like
/// any temporary), and the product runs as an f32 one. Widening inside the
/// register tiles instead converts every element of A once per column tile
/// and of B once per row tile, and the extra registers spill accumulators
/// (slower than f32: docs/mixed-precision.md). The copy
/// costs O(MK + KN) against the product's O(MNK). Later products of the
/// same block that read the same narrow buffer (the Q, K and V projections
/// of one input, the weight gradients that share it) reuse the copy while
/// nothing between them may write that buffer.
void widenNarrowOperands(ModuleOp module,
                         llvm::function_ref<bool(Operation *)> keepsNarrow);

/// The casts around the products that read narrow operands as f32
/// (`keepsNarrow`: those that read them as they are, on AMX tiles or
/// vdpbf16ps): rounded values stored as f32 where only such products read
/// them, casts done by the loops that write their inputs, and the narrow
/// operands left widened into f32 copies.
void prepareProductOperands(ModuleOp module,
                            MutableArrayRef<linalg::GenericOp> epilogues,
                            llvm::function_ref<bool(Operation *)> keepsNarrow);

constexpr llvm::StringLiteral kTileInitAttr = "tgc.fill_tiles_with";

/// Products the schedule tiles: matmuls, and batch matmuls of the default
/// or transposed-left-operand layout, on static buffers (others are left to
/// the loops).
bool isScheduledProduct(linalg::LinalgOp op);

/// Whether all of `op`'s operands are f32 (bf16/f16 operands are widened,
/// or become AMX tiles or vdpbf16ps products, before the f32 schedule).
bool isF32Product(linalg::LinalgOp op);

/// f32 right-hand operands [K, N] whose rows lie a multiple of 2 KiB apart
/// are copied into rows one cache line longer, which the product then
/// reads: otherwise a register tile's K panel of B falls into one or two of
/// the L1's 64 sets and is reloaded from L2 for every row tile (what
/// OpenBLAS avoids by packing B).
void padRhsRowStrides(ModuleOp module);

/// The ops of type OpTy in `module` that carry the attribute `name`, in
/// order (collected first: the callers rewrite them).
template <typename OpTy>
SmallVector<OpTy> opsWithAttr(ModuleOp module, StringRef name) {
  SmallVector<OpTy> ops;
  module.walk([&](OpTy op) {
    if (op->hasAttr(name))
      ops.push_back(op);
  });
  return ops;
}

/// Moves each product's accumulator fill (findAccumulatorInit) onto the
/// product as an attribute holding the fill's constant; after the output
/// tiles exist, fillOutputTiles puts a fill of each tile right before the
/// tile's product, where the tile's K loop then finds it in cache.
void takeAccumulatorFills(ModuleOp module, bool amx, bool bf16Dot);

void fillOutputTiles(ModuleOp module);

/// On an epilogue that takeEpilogues took: its index, which its product
/// (and the product's tiles) carry as kEpilogueAttr.
constexpr llvm::StringLiteral kEpilogueIdAttr = "tgc.epilogue_id";

/// Each product's epilogue (findEpilogue), its buffers made before the
/// product; the product carries the epilogue's index (its tiles keep it),
/// the epilogue the same index as kEpilogueIdAttr.
void takeEpilogues(ModuleOp module, bool amx);

/// The epilogues takeEpilogues took, by index (null for one gone).
SmallVector<linalg::GenericOp> collectEpilogues(ModuleOp module);

/// After the output tiles exist: each epilogue runs on the tile right after
/// the tile's product (an f32 product's tile, or the tile view that a
/// vdpbf16ps product leaves after its K loop), and the whole-buffer loop
/// goes.
void fuseEpilogues(ModuleOp module);

/// Each batch product whose output goes to a new layout (findOutputTranspose)
/// carries the transpose's index (the transpose too); the new layout's
/// buffer moves before it.
void takeOutputTransposes(ModuleOp module);

/// After the output tiles exist (as 2-D matmuls on rank-reduced views of
/// [1, mt, nt] tiles of the [B·H, S, N] output): each tile writes straight
/// into the [B, S, H, N] buffer (sequenceTile), and the whole-buffer
/// transpose goes, with the output buffer nothing reads any more.
void writeOutputTilesTransposed(ModuleOp module);

/// Layout changes into heads read only by products (findHeadsOperand): each
/// transpose carries an index and its readers' count, each product which of
/// its two inputs each feeds (-1: neither).
void takeHeadsOperands(ModuleOp module);

/// After the output tiles exist: each tile reads its rows of a head
/// straight from the sequence's layout (sequenceTile); a transpose all of
/// whose readers do goes.
void readHeadsOperandsInPlace(ModuleOp module);

bool isScheduledBatchLayout(linalg::LinalgOp op);

/// A tiled `linalg.batch_matmul` over one batch entry becomes a 2-D
/// `linalg.matmul` on rank-reduced views (with the transposed left operand's
/// map where it has one), which phase 2 schedules.
void rankReduceUnitBatches(ModuleOp module);

} // namespace tgc::cpu::matmuls

#endif // TGC_LIB_TARGET_CPU_MATMULSTAGES_H
