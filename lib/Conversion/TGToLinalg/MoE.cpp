//===- MoE.cpp - the mixture-of-experts ops → linalg and scf --------------===//
//
// Routing and dispatch are short sequential loops per token (k · E
// comparisons). A grouped product is one loop over the experts; each visits
// its row segment, whose extent is read from the offsets at run time, in
// chunks of static size: every linalg.matmul has a static shape, and goes
// through the same schedule as a dense product's.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;

namespace {

Value index(OpBuilder &b, Location l, int64_t v) {
  return arith::ConstantIndexOp::create(b, l, v);
}

Value extractAt(OpBuilder &b, Location l, Value t, ValueRange at) {
  return tensor::ExtractOp::create(b, l, t, at);
}

Value insertAt(OpBuilder &b, Location l, Value v, Value t, ValueRange at) {
  return tensor::InsertOp::create(b, l, v, t, at);
}

Value toIndex(OpBuilder &b, Location l, Value i32) {
  return arith::IndexCastOp::create(b, l, b.getIndexType(), i32);
}

Value toI32(OpBuilder &b, Location l, Value idx) {
  return arith::IndexCastOp::create(b, l, b.getI32Type(), idx);
}

/// `for i in [0, n)` carrying `init`; `body` returns the next values.
SmallVector<Value>
loop(OpBuilder &b, Location l, Value n, ValueRange init,
     function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)>
         body) {
  auto forOp = scf::ForOp::create(
      b, l, index(b, l, 0), n, index(b, l, 1), init,
      [&](OpBuilder &nb, Location nl, Value i, ValueRange args) {
        scf::YieldOp::create(nb, nl, body(nb, nl, i, args));
      });
  return SmallVector<Value>(forOp.getResults());
}

SmallVector<Value>
loop(OpBuilder &b, Location l, int64_t n, ValueRange init,
     function_ref<SmallVector<Value>(OpBuilder &, Location, Value, ValueRange)>
         body) {
  return loop(b, l, index(b, l, n), init, body);
}

/// softmax(logits) along the last axis of `[R, E]` in `type` (the routing
/// weights' element type).
Value probabilities(OpBuilder &b, Location l, Value logits, Type type) {
  return softmax(b, l, castElements(b, l, logits, type), 1);
}

/// A rank-2 view `[rows, last]` of `v`.
Value asMatrix(OpBuilder &b, Location l, Value v) {
  RankedTensorType t = tensorType(v);
  int64_t last = t.getShape().back();
  return reshape(b, l, v, t.clone({t.getNumElements() / last, last}));
}

struct RouteLowering : OpConversionPattern<RouteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RouteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location l = op.getLoc();
    RankedTensorType wType = op.getWeights().getType();
    Type elt = wType.getElementType();
    Value logits = asMatrix(rewriter, l, adaptor.getLogits());
    int64_t rows = tensorType(logits).getDimSize(0),
            experts = tensorType(logits).getDimSize(1), k = op.getTopK();
    Value p = probabilities(rewriter, l, logits, elt);
    Value weights = tensor::EmptyOp::create(rewriter, l, {rows, k}, elt);
    Value chosen =
        tensor::EmptyOp::create(rewriter, l, {rows, k}, rewriter.getI32Type());
    bool normalize = op.getNormalize();
    SmallVector<Value> out = loop(
        rewriter, l, rows, {weights, chosen},
        [&](OpBuilder &b, Location l, Value r, ValueRange acc) {
          // The j-th choice is the largest probability after the previous
          // choice in the order (probability descending, expert ascending):
          // ties go to the lower expert, each expert at most once.
          Value inf = constantFloat(b, l, elt, INFINITY);
          Value none = index(b, l, -1);
          SmallVector<Value> picked = loop(
              b, l, k, {acc[0], acc[1], inf, none, cst(b, l, inf, 0.0)},
              [&](OpBuilder &b, Location l, Value j, ValueRange s) {
                Value prevP = s[2], prevE = s[3];
                // Probabilities are >= 0: the first candidate beats -inf.
                SmallVector<Value> best = loop(
                    b, l, experts,
                    {constantFloat(b, l, elt, -INFINITY), index(b, l, 0)},
                    [&](OpBuilder &b, Location l, Value e, ValueRange m) {
                      Value pe = extractAt(b, l, p, {r, e});
                      Value below = arith::CmpFOp::create(
                          b, l, arith::CmpFPredicate::OLT, pe, prevP);
                      Value tie = arith::AndIOp::create(
                          b, l,
                          arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ,
                                                pe, prevP),
                          arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt,
                                                e, prevE));
                      Value after = arith::OrIOp::create(b, l, below, tie);
                      // Strictly larger: ties keep the lower expert.
                      Value larger = arith::CmpFOp::create(
                          b, l, arith::CmpFPredicate::OGT, pe, m[0]);
                      Value take = arith::AndIOp::create(b, l, after, larger);
                      return SmallVector<Value>{
                          arith::SelectOp::create(b, l, take, pe, m[0]),
                          arith::SelectOp::create(b, l, take, e, m[1])};
                    });
                Value w = insertAt(b, l, best[0], s[0], {r, j});
                Value ids =
                    insertAt(b, l, toI32(b, l, best[1]), s[1], {r, j});
                return SmallVector<Value>{w, ids, best[0], best[1],
                                          addF(b, l, s[4], best[0])};
              });
          Value w = picked[0];
          if (normalize)
            w = loop(b, l, k, {w},
                     [&](OpBuilder &b, Location l, Value j, ValueRange s) {
                       Value v = extractAt(b, l, s[0], {r, j});
                       return SmallVector<Value>{insertAt(
                           b, l, divF(b, l, v, picked[4]), s[0], {r, j})};
                     })[0];
          return SmallVector<Value>{w, picked[1]};
        });
    rewriter.replaceOp(op, {reshape(rewriter, l, out[0], wType),
                            reshape(rewriter, l, out[1],
                                    op.getExperts().getType())});
    return success();
  }
};

struct RouteGradLowering : OpConversionPattern<RouteGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RouteGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location l = op.getLoc();
    Value grad = asMatrix(rewriter, l, adaptor.getGrad());
    Value experts = asMatrix(rewriter, l, adaptor.getExperts());
    Value logits = asMatrix(rewriter, l, adaptor.getLogits());
    Type elt = tensorType(grad).getElementType();
    int64_t rows = tensorType(logits).getDimSize(0),
            numExperts = tensorType(logits).getDimSize(1),
            k = tensorType(grad).getDimSize(1);
    Value p = probabilities(rewriter, l, logits, elt);
    bool normalize = op.getNormalize();
    Value init = tensor::EmptyOp::create(rewriter, l, {rows, numExperts}, elt);
    Value out = loop(
        rewriter, l, rows, {init},
        [&](OpBuilder &b, Location l, Value r, ValueRange acc) {
          auto chosenP = [&](OpBuilder &b, Location l, Value j) {
            Value e =
                clampIndex(b, l, extractAt(b, l, experts, {r, j}), numExperts);
            return std::make_pair(e, extractAt(b, l, p, {r, e}));
          };
          Value zero = constantFloat(b, l, elt, 0.0);
          // S = Σ_j p[e_j] and Σ_j g_j p[e_j].
          SmallVector<Value> sums = loop(
              b, l, k, {zero, zero},
              [&](OpBuilder &b, Location l, Value j, ValueRange s) {
                Value pj = chosenP(b, l, j).second;
                Value g = extractAt(b, l, grad, {r, j});
                return SmallVector<Value>{addF(b, l, s[0], pj),
                                          addF(b, l, s[1], mulF(b, l, g, pj))};
              });
          Value total = sums[0], dot = divF(b, l, sums[1], sums[0]);
          // dp at the chosen experts, then Σ dp·p over them.
          auto dpOf = [&](OpBuilder &b, Location l, Value j) {
            Value g = extractAt(b, l, grad, {r, j});
            return normalize ? divF(b, l, subF(b, l, g, dot), total) : g;
          };
          Value inner =
              loop(b, l, k, {zero},
                   [&](OpBuilder &b, Location l, Value j, ValueRange s) {
                     Value pj = chosenP(b, l, j).second;
                     return SmallVector<Value>{
                         addF(b, l, s[0], mulF(b, l, dpOf(b, l, j), pj))};
                   })[0];
          // result = p ⊙ (dp − inner): −p·inner everywhere, + p·dp at the
          // chosen experts.
          Value row =
              loop(b, l, numExperts, {acc[0]},
                   [&](OpBuilder &b, Location l, Value e, ValueRange s) {
                     Value pe = extractAt(b, l, p, {r, e});
                     Value v = arith::NegFOp::create(b, l, mulF(b, l, pe, inner));
                     return SmallVector<Value>{insertAt(b, l, v, s[0], {r, e})};
                   })[0];
          row = loop(b, l, k, {row},
                     [&](OpBuilder &b, Location l, Value j, ValueRange s) {
                       auto [e, pj] = chosenP(b, l, j);
                       Value v = extractAt(b, l, s[0], {r, e});
                       v = addF(b, l, v, mulF(b, l, pj, dpOf(b, l, j)));
                       return SmallVector<Value>{insertAt(b, l, v, s[0], {r, e})};
                     })[0];
          return SmallVector<Value>{row};
        })[0];
    RankedTensorType outType = op.getType();
    out = castElements(rewriter, l, out, outType.getElementType());
    rewriter.replaceOp(op, reshape(rewriter, l, out, outType));
    return success();
  }
};

struct ExpertDispatchLowering : OpConversionPattern<ExpertDispatchOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ExpertDispatchOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // A stable counting sort of the pairs by expert.
    Location l = op.getLoc();
    int64_t E = op.getNumExperts();
    RankedTensorType expertsType = op.getExperts().getType();
    int64_t n = expertsType.getNumElements(), k = expertsType.getDimSize(1);
    Type i32 = rewriter.getI32Type();
    Value flat = reshape(rewriter, l, adaptor.getExperts(),
                         RankedTensorType::get({n}, i32));
    auto expertOf = [&](OpBuilder &b, Location l, Value i) {
      return clampIndex(b, l, extractAt(b, l, flat, {i}), E);
    };
    Value zeros =
        linalg::FillOp::create(
            rewriter, l, ValueRange{arith::ConstantIntOp::create(rewriter, l, 0, 32)},
            ValueRange{tensor::EmptyOp::create(rewriter, l, {E + 1}, i32)})
            .getResult(0);
    Value one = arith::ConstantIntOp::create(rewriter, l, 1, 32);
    Value counts =
        loop(rewriter, l, n, {zeros},
             [&](OpBuilder &b, Location l, Value i, ValueRange s) {
               Value at = arith::AddIOp::create(b, l, expertOf(b, l, i),
                                                index(b, l, 1));
               Value c = arith::AddIOp::create(
                   b, l, extractAt(b, l, s[0], {at}), one);
               return SmallVector<Value>{insertAt(b, l, c, s[0], {at})};
             })[0];
    Value offsets =
        loop(rewriter, l, E, {counts},
             [&](OpBuilder &b, Location l, Value e, ValueRange s) {
               Value next = arith::AddIOp::create(b, l, e, index(b, l, 1));
               Value v = arith::AddIOp::create(
                   b, l, extractAt(b, l, s[0], {e}),
                   extractAt(b, l, s[0], {next}));
               return SmallVector<Value>{insertAt(b, l, v, s[0], {next})};
             })[0];
    Value rows = tensor::EmptyOp::create(rewriter, l, {n}, i32);
    Value positions = tensor::EmptyOp::create(rewriter, l, {n}, i32);
    Value kc = index(rewriter, l, k);
    SmallVector<Value> sorted = loop(
        rewriter, l, n, {offsets, rows, positions},
        [&](OpBuilder &b, Location l, Value i, ValueRange s) {
          Value e = expertOf(b, l, i);
          Value row = extractAt(b, l, s[0], {e});
          Value cursor = insertAt(b, l, arith::AddIOp::create(b, l, row, one),
                                  s[0], {e});
          Value token = toI32(b, l, arith::DivUIOp::create(b, l, i, kc));
          Value r = insertAt(b, l, token, s[1], {toIndex(b, l, row)});
          Value pos = insertAt(b, l, row, s[2], {i});
          return SmallVector<Value>{cursor, r, pos};
        });
    rewriter.replaceOp(op, {sorted[1],
                            reshape(rewriter, l, sorted[2], expertsType),
                            offsets});
    return success();
  }
};

struct ExpertCountsLowering : OpConversionPattern<ExpertCountsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ExpertCountsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location l = op.getLoc();
    RankedTensorType out = op.getType();
    int64_t E = op.getNumExperts();
    int64_t n = op.getExperts().getType().getNumElements();
    Value flat = reshape(rewriter, l, adaptor.getExperts(),
                         RankedTensorType::get({n}, rewriter.getI32Type()));
    Value counts = loop(
        rewriter, l, n, {filled(rewriter, l, out, 0.0)},
        [&](OpBuilder &b, Location l, Value i, ValueRange s) {
          Value e = clampIndex(b, l, extractAt(b, l, flat, {i}), E);
          Value c = extractAt(b, l, s[0], {e});
          c = addF(b, l, c, cst(b, l, c, 1.0));
          return SmallVector<Value>{insertAt(b, l, c, s[0], {e})};
        })[0];
    rewriter.replaceOp(op, counts);
    return success();
  }
};

/// The rows `[lo, hi)` of group `e`, clamped into `[0, rows]`.
std::pair<Value, Value> segment(OpBuilder &b, Location l, Value offsets,
                                Value e, int64_t rows) {
  auto clamp = [&](Value v, Value lo) {
    return arith::MinSIOp::create(b, l, arith::MaxSIOp::create(b, l, v, lo),
                                  index(b, l, rows));
  };
  Value zero = index(b, l, 0);
  Value next = arith::AddIOp::create(b, l, e, index(b, l, 1));
  Value lo = clamp(toIndex(b, l, extractAt(b, l, offsets, {e})), zero);
  Value hi = clamp(toIndex(b, l, extractAt(b, l, offsets, {next})), lo);
  return {lo, hi};
}

/// `weights[e]` for a run-time `e`: a switch that yields one of the
/// experts' matrices, so one loop body serves every expert (a product per
/// expert would multiply the compiler's work by the number of experts).
Value selectExpert(OpBuilder &b, Location l, ValueRange weights, Value e) {
  if (weights.size() == 1)
    return weights.front();
  SmallVector<int64_t> cases =
      llvm::to_vector(llvm::seq<int64_t>(0, weights.size() - 1));
  auto select = scf::IndexSwitchOp::create(
      b, l, TypeRange{weights.front().getType()}, e, cases, cases.size());
  OpBuilder::InsertionGuard guard(b);
  for (auto [i, region] : llvm::enumerate(select.getCaseRegions())) {
    b.setInsertionPointToStart(&region.emplaceBlock());
    scf::YieldOp::create(b, l, weights[i]);
  }
  b.setInsertionPointToStart(&select.getDefaultRegion().emplaceBlock());
  scf::YieldOp::create(b, l, weights.back());
  return select.getResult(0);
}

/// Rows per chunk of an expert's segment, then per padded chunk of its
/// remainder, as the target chose them (#tg.row_chunks): every product is
/// of static shape. Without a choice, one padded chunk of all `rows`.
struct ChunkSizes {
  int64_t rows, tailRows;
};
ChunkSizes chunkSizesOf(Operation *op, int64_t rows) {
  if (auto chunks =
          op->getAttrOfType<RowChunksAttr>(TGDialect::kTilingAttrName))
    return {chunks.getRows(), chunks.getTailRows()};
  int64_t whole = std::max<int64_t>(rows, 1);
  return {whole, whole};
}

/// One chunk of an expert's rows: its first row, its static size, and the
/// rows of it that belong to the expert (the others are padding).
struct Chunk {
  Value first;
  int64_t size;
  Value rows;
  bool padded;
};

/// Visits the rows `[lo, hi)` in chunks of `sizes.rows`, then the rest in
/// padded chunks of `sizes.tailRows`, carrying `init`.
Value forEachRowChunk(
    OpBuilder &b, Location l, ChunkSizes sizes, Value lo, Value hi, Value init,
    function_ref<Value(OpBuilder &, Location, const Chunk &, Value)> body) {
  // `count` chunks of `size` rows from `start`; a padded chunk holds the
  // rows left before `hi`, at most `size`.
  auto chunks = [&](Value start, Value count, int64_t size, bool padded,
                    Value carried) {
    return loop(b, l, count, {carried},
                [&](OpBuilder &b, Location l, Value c, ValueRange s) {
                  Value first = arith::AddIOp::create(
                      b, l, start,
                      arith::MulIOp::create(b, l, c, index(b, l, size)));
                  Value rows =
                      padded ? arith::MinUIOp::create(
                                   b, l, index(b, l, size),
                                   arith::SubIOp::create(b, l, hi, first))
                             : index(b, l, size);
                  Chunk chunk{first, size, rows, padded};
                  return SmallVector<Value>{body(b, l, chunk, s[0])};
                })[0];
  };
  Value n = arith::SubIOp::create(b, l, hi, lo);
  Value full = arith::DivUIOp::create(b, l, n, index(b, l, sizes.rows));
  Value acc = chunks(lo, full, sizes.rows, /*padded=*/false, init);
  Value rest = arith::AddIOp::create(
      b, l, lo, arith::MulIOp::create(b, l, full, index(b, l, sizes.rows)));
  Value tails = arith::CeilDivUIOp::create(
      b, l, arith::SubIOp::create(b, l, hi, rest), index(b, l, sizes.tailRows));
  return chunks(rest, tails, sizes.tailRows, /*padded=*/true, acc);
}

SmallVector<OpFoldResult> rowOffsets(OpBuilder &b, Value first) {
  return {first, b.getIndexAttr(0)};
}
SmallVector<OpFoldResult> unitStrides(OpBuilder &b) {
  return {b.getIndexAttr(1), b.getIndexAttr(1)};
}

/// The chunk's rows of `t` as a static `[size, cols]` tensor: padded
/// chunks are zero past the expert's rows (so they add nothing to a sum
/// over rows, and nothing undefined reaches a product).
Value chunkRows(OpBuilder &b, Location l, Value t, const Chunk &c) {
  RankedTensorType type = tensorType(t);
  int64_t cols = type.getDimSize(1);
  auto staticType = type.clone({c.size, cols});
  if (!c.padded)
    return tensor::ExtractSliceOp::create(
        b, l, staticType, t, rowOffsets(b, c.first),
        {b.getIndexAttr(c.size), b.getIndexAttr(cols)}, unitStrides(b));
  Value part = tensor::ExtractSliceOp::create(
      b, l, t, rowOffsets(b, c.first), {c.rows, b.getIndexAttr(cols)},
      unitStrides(b));
  return tensor::InsertSliceOp::create(
      b, l, part, filled(b, l, staticType, 0.0), rowOffsets(b, index(b, l, 0)),
      {c.rows, b.getIndexAttr(cols)}, unitStrides(b));
}

/// Writes the chunk's rows of `rows` ([size, cols]) into `dest` at its
/// first row.
Value storeChunk(OpBuilder &b, Location l, Value rows, Value dest,
                 const Chunk &c) {
  int64_t cols = tensorType(rows).getDimSize(1);
  if (c.padded)
    rows = tensor::ExtractSliceOp::create(
        b, l, rows, rowOffsets(b, index(b, l, 0)),
        {c.rows, b.getIndexAttr(cols)}, unitStrides(b));
  SmallVector<OpFoldResult> sizes{c.padded ? OpFoldResult(c.rows)
                                           : b.getIndexAttr(c.size),
                                  b.getIndexAttr(cols)};
  return tensor::InsertSliceOp::create(b, l, rows, dest,
                                       rowOffsets(b, c.first), sizes,
                                       unitStrides(b));
}

struct GroupedMatmulLowering : OpConversionPattern<GroupedMatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GroupedMatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location l = op.getLoc();
    RankedTensorType out = op.getType();
    int64_t rows = out.getDimSize(0), m = out.getDimSize(1);
    Type acc = accumulationType(op.getInput().getType().getElementType());
    ChunkSizes sizes = chunkSizesOf(op, rows);
    ValueRange weights = adaptor.getWeights();
    Value result = loop(
        rewriter, l, weights.size(), {filled(rewriter, l, out.clone(acc), 0.0)},
        [&](OpBuilder &b, Location l, Value e, ValueRange s) {
          auto [lo, hi] = segment(b, l, adaptor.getOffsets(), e, rows);
          Value w = selectExpert(b, l, weights, e);
          Value rhs = op.getTransposeWeights() ? transpose2D(b, l, w) : w;
          return SmallVector<Value>{forEachRowChunk(
              b, l, sizes, lo, hi, s[0],
              [&](OpBuilder &b, Location l, const Chunk &c, Value dest) {
                Value x = chunkRows(b, l, adaptor.getInput(), c);
                Value product = matmul2D(
                    b, l, x, rhs,
                    filled(b, l, RankedTensorType::get({c.size, m}, acc), 0.0));
                return storeChunk(b, l, product, dest, c);
              })};
        })[0];
    rewriter.replaceOp(op, castElements(rewriter, l, result, out.getElementType()));
    return success();
  }
};

struct GroupedWeightGradLowering : OpConversionPattern<GroupedWeightGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GroupedWeightGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Each expert's lhsᵀ·rhs summed over its chunks of rows, into its slice
    // of one `[E, K, M]` tensor the results are views of.
    Location l = op.getLoc();
    int64_t rows = op.getLhs().getType().getDimSize(0);
    Type acc = accumulationType(op.getLhs().getType().getElementType());
    auto type = llvm::cast<RankedTensorType>(op.getResult(0).getType());
    int64_t E = op.getNumResults(), K = type.getDimSize(0),
            M = type.getDimSize(1);
    auto stackType = RankedTensorType::get({E, K, M}, acc);
    auto sliceType = RankedTensorType::get({K, M}, acc);
    auto expertSlice = [&](OpBuilder &b, OpFoldResult e) {
      return SmallVector<OpFoldResult>{e, b.getIndexAttr(0), b.getIndexAttr(0)};
    };
    SmallVector<OpFoldResult> sliceSizes{rewriter.getIndexAttr(1),
                                         rewriter.getIndexAttr(K),
                                         rewriter.getIndexAttr(M)};
    SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
    ChunkSizes sizes = chunkSizesOf(op, rows);
    Value stack =
        loop(rewriter, l, E, {filled(rewriter, l, stackType, 0.0)},
             [&](OpBuilder &b, Location l, Value e, ValueRange s) {
               auto [lo, hi] = segment(b, l, adaptor.getOffsets(), e, rows);
               Value g = tensor::ExtractSliceOp::create(b, l, sliceType, s[0],
                                                        expertSlice(b, e),
                                                        sliceSizes, strides);
               g = forEachRowChunk(
                   b, l, sizes, lo, hi, g,
                   [&](OpBuilder &b, Location l, const Chunk &c, Value sum) {
                     return matmulTransposedLhs(
                         b, l, chunkRows(b, l, adaptor.getLhs(), c),
                         chunkRows(b, l, adaptor.getRhs(), c), sum);
                   });
               return SmallVector<Value>{tensor::InsertSliceOp::create(
                   b, l, g, s[0], expertSlice(b, e), sliceSizes, strides)};
             })[0];
    SmallVector<Value> results;
    for (int64_t e = 0; e < E; ++e) {
      Value g = tensor::ExtractSliceOp::create(
          rewriter, l, sliceType, stack,
          expertSlice(rewriter, rewriter.getIndexAttr(e)), sliceSizes, strides);
      auto resultType = llvm::cast<RankedTensorType>(op.getResult(e).getType());
      results.push_back(
          castElements(rewriter, l, g, resultType.getElementType()));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::tg::populateTGMoEToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<RouteLowering, RouteGradLowering, ExpertDispatchLowering,
               ExpertCountsLowering,
               GroupedMatmulLowering, GroupedWeightGradLowering>(
      patterns.getContext());
}
