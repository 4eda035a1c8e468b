//===- Attention.cpp - tg.attention → linalg (FlashAttention-2) ---------===//
//
// FlashAttention-2 over batched matrix products. Queries of the G = Hq / Hkv
// heads sharing a key/value head are stacked as rows, position-major
// ([B·Hkv, S·G, D], row s·G + g), so grouped-query attention needs no index
// arithmetic and never repeats K/V, and a tile of T positions is a contiguous
// block of T·G rows. Keys are tiled by the same T: for each tile of queries
// the key tiles are visited in order with an online softmax (running row max
// m, running sum l, rescaled accumulator), so only [B·Hkv, T·G, T] scores
// exist at a time; the output and the per-row logsumexp m + log l are kept.
// With `causal`, key tiles above the diagonal are never visited: tiles left
// of it need no mask, and only the diagonal tile is masked. With a `window`
// W, key tiles wholly before every query's window are never visited
// either, so the work grows with S·W: the diagonal tile comes first (each
// row's own key is in it, so no row's running max stays −inf), then the
// tiles on the window's edge, masked, then those inside it. The gradient
// recomputes each tile's probabilities from the logsumexp, writes dQ's rows
// per query tile and accumulates dK and dV into the key tiles' rows.
//
// The tile size is the target's (the op's #tg.attention_tiling); without
// one the whole sequence is one tile (the same code, no loops).
//
//===----------------------------------------------------------------------===//

#include "AttentionTiles.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;
using namespace mlir::tg::lowering::attention;

namespace {

/// Where a query tile's key tiles come from: Kᵀ's columns and V's rows for
/// keys [offset, offset + keys), as [N, D, keys] and [N, keys, Dv].
struct KeyTiles {
  std::function<Value(OpBuilder &, Location, OpFoldResult, int64_t)> keysT,
      values;
};

/// FlashAttention-2's forward for one query tile: rows `qc` ([N, R, D],
/// R = size·G, positions [offset, offset + size)) against the key tiles it
/// sees, with an online softmax (running row max m, running sum l,
/// rescaled accumulator). Returns the final state: m and l ([N, R]) and
/// the unnormalised output acc ([N, R, Dv]).
SmallVector<Value> attendQueryTile(OpBuilder &b, Location nl, const Layout &l,
                                   const Mask &mask, const Scoring &score,
                                   int64_t tile, OpFoldResult offset,
                                   int64_t size, Value qc,
                                   const KeyTiles &keyTiles) {
  int64_t n = tensorType(qc).getDimSize(0), rows = size * l.G;
  // Running row max, row sum of exp(s − max) and unnormalised output.
  SmallVector<Value> state{
      filled(b, nl, RankedTensorType::get({n, rows}, l.elt), kNegInf),
      filled(b, nl, RankedTensorType::get({n, rows}, l.elt), 0.0),
      filled(b, nl, RankedTensorType::get({n, rows, l.Dv}, l.elt), 0.0)};
  state = forEachKeyTile(
      b, nl, l, mask, tile, offset, size, state,
      [&](OpBuilder &tb, Location tl, OpFoldResult keyOffset, int64_t keys,
          const TileMask &tileMask, ValueRange st) -> SmallVector<Value> {
        Value s = scores(tb, tl, l, qc, keyTiles.keysT(tb, tl, keyOffset, keys),
                         score, tileMask);
        Value tileMax =
            reduceAxis(tb, tl, s, 2, kNegInf,
                       [](OpBuilder &nb, Location nl2, ValueRange a) -> Value {
                         return arith::MaximumFOp::create(nb, nl2, a[0], a[1]);
                       });
        // The first key tile a query tile visits (the state still its
        // fills: m = −inf, l = 0, acc = 0) has nothing to rescale: m is the
        // tile's max, l its row sums, and the product accumulates into a
        // fresh zero output (which the target can zero inside its tiles).
        // Same values: the rescale would multiply zeros by exp(−inf) = 0.
        bool first = llvm::all_of(
            st, [](Value v) { return v.getDefiningOp<linalg::FillOp>(); });
        // alpha = exp(m − max(m, tile max)) rescales what the earlier
        // tiles summed; then m takes the new max in place.
        Value m = tileMax, alpha;
        if (!first) {
          alpha = elementwise(
              tb, tl, tensorType(tileMax), {st[0], tileMax},
              [](OpBuilder &nb, Location nl2, ValueRange a) -> Value {
                Value mx = arith::MaximumFOp::create(nb, nl2, a[0], a[1]);
                return math::ExpOp::create(nb, nl2, subF(nb, nl2, a[0], mx));
              });
          m = updateRows(
              tb, tl, st[0], tileMax,
              [](OpBuilder &nb, Location nl2, ValueRange a) -> Value {
                return arith::MaximumFOp::create(nb, nl2, a[0], a[1]);
              });
        }
        Value p = updateRows(
            tb, tl, s, m,
            [](OpBuilder &nb, Location nl2, ValueRange a) -> Value {
              return math::ExpOp::create(nb, nl2, subF(nb, nl2, a[1], a[0]));
            });
        auto rescaled = [&](Value running) {
          return first ? running
                       : updateRows(tb, tl, running, alpha,
                                    [](OpBuilder &nb, Location nl2,
                                       ValueRange a) -> Value {
                                      return mulF(nb, nl2, a[1], a[0]);
                                    });
        };
        Value sum = addRowSums(tb, tl, p, rescaled(st[1]));
        Value acc =
            batchMatmulInto(tb, tl, p, keyTiles.values(tb, tl, keyOffset, keys),
                            rescaled(st[2]));
        return {m, sum, acc};
      });
  return state;
}

/// The output rows acc / l into `outDest` (rank r, rows first) and the
/// logsumexp rows m + log l into `lseDest` (rank r − 1): `state` is m, l
/// and acc in those shapes.
std::pair<Value, Value> finishRows(OpBuilder &b, Location loc, ValueRange state,
                                   Value outDest, Value lseDest) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = tensorType(outDest).getRank();
  SmallVector<int64_t> rowDims;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rowDims.push_back(d);
  Value outRows = generic(
      b, loc, {state[2], state[1]},
      {AffineMap::getMultiDimIdentityMap(rank, ctx),
       dimsMap(ctx, rank, rowDims)},
      outDest, AffineMap::getMultiDimIdentityMap(rank, ctx), iterators(rank),
      [](OpBuilder &nb, Location nl2, ValueRange a) -> Value {
        return divF(nb, nl2, a[0], a[1]);
      });
  AffineMap rows = AffineMap::getMultiDimIdentityMap(rank - 1, ctx);
  Value lseRows = generic(
      b, loc, {state[0], state[1]}, {rows, rows}, lseDest, rows,
      iterators(rank - 1), [](OpBuilder &nb, Location nl2, ValueRange a) {
        return addF(nb, nl2, a[0], math::LogOp::create(nb, nl2, a[1]));
      });
  return {outRows, lseRows};
}

/// The forward as parallel tasks (#tg.attention_tiling's `task_tile`): one per
/// (sequence, key/value head, query tile), in an scf.forall. A task reads
/// its query rows and each key tile from the sequence's layout into small
/// contiguous tiles of its own (the queries of the G heads of a group
/// stacked position-major, Kᵀ, V) and runs attendQueryTile on them with
/// N = 1; its scores, probabilities and running state never leave it. It
/// computes its output rows and logsumexp straight into its slices of the
/// sequence's layout.
/// Full query tiles in one forall, the remainder in a second.
std::pair<Value, Value> attentionTasks(OpBuilder &b, Location loc,
                                       const Layout &l, const Mask &mask,
                                       const Scoring &score, int64_t tile,
                                       Value query, Value key, Value value) {
  // Only expands and collapses here (matrixAsBatch).
  Value q5 = byGroup(b, loc, l, query, l.D);
  SmallVector<Value> outs{
      tensor::EmptyOp::create(b, loc, {l.B, l.S, l.Hkv, l.G, l.Dv}, l.elt),
      tensor::EmptyOp::create(b, loc, {l.B, l.S, l.Hkv, l.G}, l.elt)};
  OpFoldResult zero = b.getIndexAttr(0);
  auto runTasks = [&](int64_t tiles, int64_t size, int64_t firstPosition) {
    SmallVector<OpFoldResult> counts{b.getIndexAttr(l.B), b.getIndexAttr(l.Hkv),
                                     b.getIndexAttr(tiles)};
    auto forall =
        scf::ForallOp::create(b, loc, counts, outs, /*mapping=*/std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    Value seq = forall.getInductionVars()[0],
          head = forall.getInductionVars()[1];
    OpFoldResult position =
        tiles == 1
            ? OpFoldResult(b.getIndexAttr(firstPosition))
            : OpFoldResult(arith::MulIOp::create(
                               b, loc, forall.getInductionVars()[2],
                               arith::ConstantIndexOp::create(b, loc, tile))
                               .getResult());
    int64_t rows = size * l.G;
    Value qTile =
        contiguousCopy(b, loc,
                       sliceOf(b, loc, q5, {seq, position, head, zero, zero},
                               {1, size, 1, l.G, l.D}, {0, 2}));
    // [size, G, D] → [size·G, D] → [1, size·G, D].
    Value qc = regroup(b, loc, qTile, {{0, 1}, {2}}, {{0, 1}, {2}},
                       RankedTensorType::get({1, rows, l.D}, l.elt));
    KeyTiles keyTiles;
    keyTiles.keysT = [&](OpBuilder &tb, Location tl, OpFoldResult keyOffset,
                         int64_t keys) {
      Value k = sliceOf(tb, tl, key, {seq, keyOffset, head, zero},
                        {1, keys, 1, l.D}, {0, 2});
      return matrixAsBatch(tb, tl, transpose(tb, tl, k, {1, 0}));
    };
    keyTiles.values = [&](OpBuilder &tb, Location tl, OpFoldResult keyOffset,
                          int64_t keys) {
      Value v = sliceOf(tb, tl, value, {seq, keyOffset, head, zero},
                        {1, keys, 1, l.Dv}, {0, 2});
      return matrixAsBatch(tb, tl, contiguousCopy(tb, tl, v));
    };
    SmallVector<Value> state = attendQueryTile(b, loc, l, mask, score, tile,
                                               position, size, qc, keyTiles);
    // The state by position and head of the group: [size, G(, Dv)].
    auto statRows = [&](Value v) {
      return regroup(b, loc, v, {{0, 1}}, {{0, 1}},
                     RankedTensorType::get({size, l.G}, l.elt));
    };
    SmallVector<Value> byPosition{
        statRows(state[0]), statRows(state[1]),
        regroup(b, loc, state[2], {{0, 1}, {2}}, {{0, 1}, {2}},
                RankedTensorType::get({size, l.G, l.Dv}, l.elt))};
    ValueRange shared = forall.getRegionIterArgs();
    // The rows go into the very slices they were computed into.
    auto outSlice = llvm::cast<tensor::ExtractSliceOp>(
        sliceOf(b, loc, shared[0], {seq, position, head, zero, zero},
                {1, size, 1, l.G, l.Dv}, {0, 2})
            .getDefiningOp());
    auto lseSlice = llvm::cast<tensor::ExtractSliceOp>(
        sliceOf(b, loc, shared[1], {seq, position, head, zero},
                {1, size, 1, l.G}, {0, 2})
            .getDefiningOp());
    auto [out3, lse2] = finishRows(b, loc, byPosition, outSlice.getResult(),
                                   lseSlice.getResult());
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    for (auto [rows, slice] : {std::pair{out3, outSlice}, {lse2, lseSlice}})
      tensor::ParallelInsertSliceOp::create(
          b, loc, rows, slice.getSource(), slice.getMixedOffsets(),
          slice.getMixedSizes(), slice.getMixedStrides());
    outs.assign(forall.getResults().begin(), forall.getResults().end());
  };
  if (int64_t full = l.S / tile)
    runTasks(full, tile, 0);
  if (int64_t rest = l.S % tile)
    runTasks(1, rest, l.S / tile * tile);
  return {
      tensor::CollapseShapeOp::create(
          b, loc, outs[0],
          ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4}}),
      tensor::CollapseShapeOp::create(
          b, loc, outs[1], ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}})};
}

struct AttentionLowering : OpConversionPattern<AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Layout l(adaptor.getQuery(), adaptor.getKey(), adaptor.getValue());
    Mask mask{op.getCausal(), windowOf(op)};
    Scoring score = scoringOf(op);
    if (Value positions = adaptor.getPositions()) {
      auto [out, lse] =
          cachedAttention(rewriter, loc, l, mask, score, adaptor.getQuery(),
                          adaptor.getKey(), adaptor.getValue(), positions);
      rewriter.replaceOp(op, {out, lse});
      return success();
    }
    Tiling tiling = tilingOf(op, l);
    if (tiling.taskTile > 0) {
      auto [out, lse] = attentionTasks(rewriter, loc, l, mask, score,
                                       tiling.taskTile, adaptor.getQuery(),
                                       adaptor.getKey(), adaptor.getValue());
      rewriter.replaceOp(op, {out, lse});
      return success();
    }
    Value q = l.queryRows(rewriter, loc, adaptor.getQuery());
    Value k = l.keyRows(rewriter, loc, adaptor.getKey());
    Value v = l.keyRows(rewriter, loc, adaptor.getValue());
    Value kT = transposeMatrices(rewriter, loc, k);
    int64_t bh = l.B * l.Hkv, tile = tiling.tile;
    SmallVector<Value> init{
        tensor::EmptyOp::create(rewriter, loc, {bh, l.S * l.G, l.Dv}, l.elt),
        tensor::EmptyOp::create(rewriter, loc, {bh, l.S * l.G}, l.elt)};
    KeyTiles keyTiles;
    keyTiles.keysT = [&](OpBuilder &b, Location nl, OpFoldResult keyOffset,
                         int64_t keys) {
      return sliceDim(b, nl, 2, kT, keyOffset, keys);
    };
    keyTiles.values = [&](OpBuilder &b, Location nl, OpFoldResult keyOffset,
                          int64_t keys) {
      return sliceDim(b, nl, 1, v, keyOffset, keys);
    };
    SmallVector<Value> results = forEachChunk(
        rewriter, loc, l.S, tile, init,
        [&](OpBuilder &b, Location nl, OpFoldResult offset, int64_t size,
            ValueRange args) -> SmallVector<Value> {
          OpFoldResult rowOffset = scaled(b, nl, offset, l.G);
          int64_t rows = size * l.G;
          SmallVector<Value> state =
              attendQueryTile(b, nl, l, mask, score, tile, offset, size,
                              sliceDim(b, nl, 1, q, rowOffset, rows), keyTiles);
          auto [outRows, lseRows] = finishRows(
              b, nl, state, sliceDim(b, nl, 1, args[0], rowOffset, rows),
              sliceDim(b, nl, 1, args[1], rowOffset, rows));
          return {insertDim(b, nl, 1, outRows, args[0], rowOffset),
                  insertDim(b, nl, 1, lseRows, args[1], rowOffset)};
        });
    rewriter.replaceOp(op, {l.fromQueryRows(rewriter, loc, results[0]),
                            l.fromStatRows(rewriter, loc, results[1])});
    return success();
  }
};

} // namespace

void mlir::tg::populateTGAttentionToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionLowering>(patterns.getContext());
  populateAttentionGradPattern(patterns);
}
