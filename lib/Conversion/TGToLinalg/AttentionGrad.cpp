//===- AttentionGrad.cpp - tg.attention_grad → linalg ---------------------===//
//
// FlashAttention-2's backward over the tiles of Attention.cpp: each query
// tile recomputes its key tiles' probabilities from the logsumexp, writes
// its dQ rows and accumulates dK and dV into the key tiles' rows.
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

/// out += lhsᵀ · rhs per batch entry: through the product's map with
/// `transposedOperands` (a fusion), else from a transposed copy.
Value transposedLhsProduct(OpBuilder &b, Location loc, Value lhs, Value rhs,
                           Value init, bool transposedOperands) {
  if (transposedOperands)
    return batchMatmulTransposedLhs(b, loc, lhs, rhs, init);
  return batchMatmulInto(b, loc, transposeMatrices(b, loc, lhs), rhs, init);
}

/// What the gradient of one query tile reads: the tile's rows of Q, dO,
/// logsumexp and delta ([N, R(, E)]), and the whole K, Kᵀ and Vᵀ of the
/// same N batch entries.
struct GradTileOperands {
  Value q, dO, lse, delta, k, kT, vT;
};

/// FlashAttention-2's backward for one query tile (positions [offset,
/// offset + size)): recomputes each key tile's probabilities from the
/// logsumexp, accumulates the tile's dQ rows into `dqRows` (zeroed here)
/// and dK's and dV's rows of each key tile into `dk` and `dv`. Returns the
/// new dQ rows, dK and dV.
SmallVector<Value> gradQueryTile(OpBuilder &b, Location nl, const Layout &l,
                                 const Mask &mask, const Scoring &score,
                                 int64_t tile, OpFoldResult offset,
                                 int64_t size, const GradTileOperands &t,
                                 Value dqRows, Value dk, Value dv,
                                 bool transposedOperands) {
  Value zero = constantFloat(b, nl, l.elt, 0.0);
  SmallVector<Value> state{
      linalg::FillOp::create(b, nl, zero, dqRows).getResult(0), dk, dv};
  return forEachKeyTile(
      b, nl, l, mask, tile, offset, size, state,
      [&](OpBuilder &tb, Location tl, OpFoldResult keyOffset, int64_t keys,
          const TileMask &tileMask, ValueRange st) -> SmallVector<Value> {
        Value s =
            scores(tb, tl, l, t.q, sliceDim(tb, tl, 2, t.kT, keyOffset, keys),
                   score, tileMask);
        // P = exp(s − logsumexp), in place of the scores unless dS reads
        // the capped scores too (then into a tile of its own, reading s).
        auto exp = [](OpBuilder &nb, Location nl2, ValueRange a) -> Value {
          return math::ExpOp::create(nb, nl2, subF(nb, nl2, a[1], a[0]));
        };
        MLIRContext *ctx = tb.getContext();
        Value p = score.softcap
                      ? generic(tb, tl, {t.lse, s},
                                {dimsMap(ctx, 3, {0, 1}),
                                 AffineMap::getMultiDimIdentityMap(3, ctx)},
                                tensor::EmptyOp::create(
                                    tb, tl, tensorType(s).getShape(), l.elt),
                                AffineMap::getMultiDimIdentityMap(3, ctx),
                                iterators(3), exp)
                      : updateRows(tb, tl, s, t.lse, exp);
        // dV rows += Pᵀ·dO.
        Value dvRows = transposedLhsProduct(
            tb, tl, p, t.dO, sliceDim(tb, tl, 1, st[2], keyOffset, keys),
            transposedOperands);
        // dS = scale · P ∘ (dO·Vᵀ − delta), in place of dP; with a soft cap
        // c also times max(1 − (s / c)², 0), the cap's slope at the capped
        // score s (0 where the mask made s −inf, as P is).
        Value dp = batchMatmul(tb, tl, t.dO,
                               sliceDim(tb, tl, 2, t.vT, keyOffset, keys));
        SmallVector<Value> dsInputs{p, t.delta};
        SmallVector<AffineMap> dsMaps{AffineMap::getMultiDimIdentityMap(3, ctx),
                                      dimsMap(ctx, 3, {0, 1})};
        if (score.softcap) {
          dsInputs.push_back(s);
          dsMaps.push_back(AffineMap::getMultiDimIdentityMap(3, ctx));
        }
        Value ds = generic(
            tb, tl, dsInputs, dsMaps, dp,
            AffineMap::getMultiDimIdentityMap(3, ctx), iterators(3),
            [&](OpBuilder &nb, Location nl2, ValueRange a) -> Value {
              Value dpIn = a.back();
              Value d = mulF(nb, nl2, a[0], subF(nb, nl2, dpIn, a[1]));
              d = mulF(nb, nl2, d, constantFloat(nb, nl2, l.elt, score.scale));
              if (!score.softcap)
                return d;
              return mulF(nb, nl2, d,
                          softcapSlope(nb, nl2, a[2], *score.softcap));
            });
        // dQ rows += dS·K, dK rows += dSᵀ·Q.
        Value dq = batchMatmulInto(
            tb, tl, ds, sliceDim(tb, tl, 1, t.k, keyOffset, keys), st[0]);
        Value dkRows = transposedLhsProduct(
            tb, tl, ds, t.q, sliceDim(tb, tl, 1, st[1], keyOffset, keys),
            transposedOperands);
        return {dq, insertDim(tb, tl, 1, dkRows, st[1], keyOffset),
                insertDim(tb, tl, 1, dvRows, st[2], keyOffset)};
      });
}

/// The backward over every query tile in order: `whole` holds the
/// operands of all query rows, `init` dQ (written a query tile's rows at a
/// time: they accumulate over the key tiles the tile sees), dK and dV
/// (accumulated across query tiles).
SmallVector<Value> gradQueryTiles(OpBuilder &b, Location loc, const Layout &l,
                                  const Mask &mask, const Scoring &score,
                                  int64_t tile, const GradTileOperands &whole,
                                  ValueRange init, bool transposedOperands) {
  return forEachChunk(
      b, loc, l.S, tile, init,
      [&](OpBuilder &cb, Location cl, OpFoldResult offset, int64_t size,
          ValueRange args) -> SmallVector<Value> {
        OpFoldResult rowOffset = scaled(cb, cl, offset, l.G);
        int64_t rows = size * l.G;
        GradTileOperands t = whole;
        t.q = sliceDim(cb, cl, 1, whole.q, rowOffset, rows);
        t.dO = sliceDim(cb, cl, 1, whole.dO, rowOffset, rows);
        t.lse = sliceDim(cb, cl, 1, whole.lse, rowOffset, rows);
        t.delta = sliceDim(cb, cl, 1, whole.delta, rowOffset, rows);
        SmallVector<Value> state =
            gradQueryTile(cb, cl, l, mask, score, tile, offset, size, t,
                          sliceDim(cb, cl, 1, args[0], rowOffset, rows),
                          args[1], args[2], transposedOperands);
        return {insertDim(cb, cl, 1, state[0], args[0], rowOffset), state[1],
                state[2]};
      });
}

/// The gradient as parallel tasks (#tg.attention_tiling's `task_tile`): one per
/// (sequence, key/value head), its query tiles in order inside it, because its
/// dK and dV accumulate over them. A task copies its queries, dO, K, Kᵀ and Vᵀ
/// from the sequence's layout into contiguous tensors of its own, keeps
/// its dQ, dK and dV accumulators to itself and writes them into its
/// slices of the gradients in the sequence's layout at the end.
SmallVector<Value> attentionGradTasks(OpBuilder &b, Location loc,
                                      const Layout &l, const Mask &mask,
                                      const Scoring &score, int64_t tile,
                                      Value query, Value key, Value value,
                                      Value grad, Value logsumexp, Value delta,
                                      bool transposedOperands) {
  auto rowsAsBatch = [](OpBuilder &ob, Location ol, Value v) -> Value {
    RankedTensorType t = tensorType(v);
    return tensor::ExpandShapeOp::create(
        ob, ol, RankedTensorType::get({1, t.getDimSize(0)}, t.getElementType()),
        v, ArrayRef<ReassociationIndices>{{0, 1}});
  };
  Value q5 = byGroup(b, loc, l, query, l.D),
        dO5 = byGroup(b, loc, l, grad, l.Dv);
  Value lse4 = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({l.B, l.S, l.Hkv, l.G}, l.elt), logsumexp,
      ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
  SmallVector<Value> outs{
      tensor::EmptyOp::create(b, loc, {l.B, l.S, l.Hkv, l.G, l.D}, l.elt),
      tensor::EmptyOp::create(b, loc, {l.B, l.Skv, l.Hkv, l.D}, l.elt),
      tensor::EmptyOp::create(b, loc, {l.B, l.Skv, l.Hkv, l.Dv}, l.elt)};
  auto forall = scf::ForallOp::create(
      b, loc, {b.getIndexAttr(l.B), b.getIndexAttr(l.Hkv)}, outs,
      /*mapping=*/std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    Value seq = forall.getInductionVars()[0],
          head = forall.getInductionVars()[1];
    OpFoldResult zero = b.getIndexAttr(0);
    int64_t rows = l.S * l.G;
    // [S, G, E] of this head's group → [1, S·G, E].
    auto queryRows = [&](Value x5, int64_t e) {
      Value x =
          contiguousCopy(b, loc,
                         sliceOf(b, loc, x5, {seq, zero, head, zero, zero},
                                 {1, l.S, 1, l.G, e}, {0, 2}));
      return regroup(b, loc, x, {{0, 1}, {2}}, {{0, 1}, {2}},
                     RankedTensorType::get({1, rows, e}, l.elt));
    };
    auto statRows = [&](Value s) {
      return rowsAsBatch(b, loc,
                         tensor::CollapseShapeOp::create(
                             b, loc, contiguousCopy(b, loc, s),
                             ArrayRef<ReassociationIndices>{{0, 1}}));
    };
    auto keyMatrix = [&](Value x, int64_t e) {
      return sliceOf(b, loc, x, {seq, zero, head, zero}, {1, l.Skv, 1, e},
                     {0, 2});
    };
    Value kRows = keyMatrix(key, l.D), vRows = keyMatrix(value, l.Dv);
    GradTileOperands whole;
    whole.q = queryRows(q5, l.D);
    whole.dO = queryRows(dO5, l.Dv);
    whole.lse = statRows(sliceOf(b, loc, lse4, {seq, zero, head, zero},
                                 {1, l.S, 1, l.G}, {0, 2}));
    whole.delta = statRows(sliceOf(b, loc, delta, {seq, head, zero, zero},
                                   {1, 1, l.S, l.G}, {0, 1}));
    whole.k = matrixAsBatch(b, loc, contiguousCopy(b, loc, kRows));
    whole.kT = matrixAsBatch(b, loc, transpose(b, loc, kRows, {1, 0}));
    whole.vT = matrixAsBatch(b, loc, transpose(b, loc, vRows, {1, 0}));
    SmallVector<Value> init{
        tensor::EmptyOp::create(b, loc, {1, rows, l.D}, l.elt),
        filled(b, loc, RankedTensorType::get({1, l.Skv, l.D}, l.elt), 0.0),
        filled(b, loc, RankedTensorType::get({1, l.Skv, l.Dv}, l.elt), 0.0)};
    SmallVector<Value> grads = gradQueryTiles(b, loc, l, mask, score, tile,
                                              whole, init, transposedOperands);
    // Each accumulator into its slice of the sequence's layout.
    Value dq = regroup(b, loc, grads[0], {{0, 1}, {2}}, {{0, 1}, {2}},
                       RankedTensorType::get({l.S, l.G, l.D}, l.elt));
    auto matrix = [&](Value v) -> Value {
      return tensor::CollapseShapeOp::create(
          b, loc, v, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    };
    // Copied by a loop into the output's strided slice (a copy left to
    // bufferization would be a generic strided memref copy, element by
    // element), which the task then yields.
    ValueRange shared = forall.getRegionIterArgs();
    SmallVector<std::pair<Value, tensor::ExtractSliceOp>> written;
    auto writeInto = [&](Value acc, Value dest, ArrayRef<OpFoldResult> offsets,
                         ArrayRef<int64_t> sizes, ArrayRef<int64_t> dropped) {
      auto slice = llvm::cast<tensor::ExtractSliceOp>(
          sliceOf(b, loc, dest, offsets, sizes, dropped).getDefiningOp());
      written.push_back(
          {linalg::CopyOp::create(b, loc, acc, slice.getResult()).getResult(0),
           slice});
    };
    writeInto(dq, shared[0], {seq, zero, head, zero, zero},
              {1, l.S, 1, l.G, l.D}, {0, 2});
    writeInto(matrix(grads[1]), shared[1], {seq, zero, head, zero},
              {1, l.Skv, 1, l.D}, {0, 2});
    writeInto(matrix(grads[2]), shared[2], {seq, zero, head, zero},
              {1, l.Skv, 1, l.Dv}, {0, 2});
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    for (auto [value, slice] : written)
      tensor::ParallelInsertSliceOp::create(
          b, loc, value, slice.getSource(), slice.getMixedOffsets(),
          slice.getMixedSizes(), slice.getMixedStrides());
  }
  return {tensor::CollapseShapeOp::create(
              b, loc, forall.getResult(0),
              ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4}}),
          forall.getResult(1), forall.getResult(2)};
}

struct AttentionGradLowering : OpConversionPattern<AttentionGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AttentionGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Layout l(adaptor.getQuery(), adaptor.getKey(), adaptor.getValue());
    Mask mask{op.getCausal(), windowOf(op)};
    Scoring score = scoringOf(op);
    // delta = rowsum(dO ∘ O) per query row, [B, Hkv, S, G], read from both
    // in the sequence's layout [B, S, Hkv, G, Dv] through the loop's maps:
    // the output needs no heads-layout copy (the forward then writes it in
    // the sequence's layout directly), and no layout change of delta is
    // left for the fusion to fold into dS's loop.
    Tiling tiling = tilingOf(op, l);
    int64_t bh = l.B * l.Hkv;
    Value deltaBySequence;
    {
      MLIRContext *ctx = rewriter.getContext();
      auto seq = RankedTensorType::get({l.B, l.S, l.Hkv, l.G, l.Dv}, l.elt);
      AffineMap bySequence = dimsMap(ctx, 5, {0, 2, 1, 3, 4});
      deltaBySequence = generic(
          rewriter, loc,
          {reshape(rewriter, loc, adaptor.getGrad(), seq),
           reshape(rewriter, loc, adaptor.getOutput(), seq)},
          {bySequence, bySequence},
          filled(rewriter, loc,
                 RankedTensorType::get({l.B, l.Hkv, l.S, l.G}, l.elt), 0.0),
          dimsMap(ctx, 5, {0, 1, 2, 3}), iterators(5, {4}),
          sumOf([](OpBuilder &nb, Location nl2, ValueRange a) {
            return mulF(nb, nl2, a[0], a[1]);
          }));
    }
    if (tiling.taskTile > 0) {
      rewriter.replaceOp(
          op, attentionGradTasks(rewriter, loc, l, mask, score, tiling.taskTile,
                                 adaptor.getQuery(), adaptor.getKey(),
                                 adaptor.getValue(), adaptor.getGrad(),
                                 adaptor.getLogsumexp(), deltaBySequence,
                                 tiling.transposedOperands));
      return success();
    }
    Value q = l.queryRows(rewriter, loc, adaptor.getQuery());
    Value k = l.keyRows(rewriter, loc, adaptor.getKey());
    Value v = l.keyRows(rewriter, loc, adaptor.getValue());
    Value dO = l.queryRows(rewriter, loc, adaptor.getGrad());
    Value lse = l.statRows(rewriter, loc, adaptor.getLogsumexp());
    Value delta = reshape(rewriter, loc, deltaBySequence,
                          RankedTensorType::get({bh, l.S * l.G}, l.elt));
    GradTileOperands whole{q,
                           dO,
                           lse,
                           delta,
                           k,
                           transposeMatrices(rewriter, loc, k),
                           transposeMatrices(rewriter, loc, v)};
    SmallVector<Value> init{
        tensor::EmptyOp::create(rewriter, loc, {bh, l.S * l.G, l.D}, l.elt),
        filled(rewriter, loc, tensorType(k), 0.0),
        filled(rewriter, loc, tensorType(v), 0.0)};
    SmallVector<Value> grads =
        gradQueryTiles(rewriter, loc, l, mask, score, tiling.tile, whole, init,
                       tiling.transposedOperands);
    rewriter.replaceOp(op, {l.fromQueryRows(rewriter, loc, grads[0]),
                            l.fromKeyRows(rewriter, loc, grads[1]),
                            l.fromKeyRows(rewriter, loc, grads[2])});
    return success();
  }
};

} // namespace

void mlir::tg::lowering::attention::populateAttentionGradPattern(
    RewritePatternSet &patterns) {
  patterns.add<AttentionGradLowering>(patterns.getContext());
}
