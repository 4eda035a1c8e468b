//===- Attention.cpp - tg.attention and its gradient → linalg -------------===//
//
// Grouped-query attention without index arithmetic in the maps: queries are
// viewed as [B, S, Hkv, G, D] (G = Hq / Hkv query heads per key/value head),
// so every contraction below is a plain projected-permutation generic.
// Scores are materialised per (batch, head) pair; the gradient recomputes
// them instead of reading stored probabilities.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;

namespace {

/// out[outDims] = Σ_{reduced} a[aDims] · b[bDims] over a loop nest of `rank`.
Value contract(OpBuilder &b, Location loc, Value lhs, ArrayRef<int64_t> lhsDims,
               Value rhs, ArrayRef<int64_t> rhsDims, ArrayRef<int64_t> outDims,
               ArrayRef<int64_t> reductions, RankedTensorType outType) {
  int64_t rank = outDims.size() + reductions.size();
  MLIRContext *ctx = b.getContext();
  Value init = filled(b, loc, outType, 0.0);
  return generic(b, loc, {lhs, rhs},
                 {dimsMap(ctx, rank, lhsDims), dimsMap(ctx, rank, rhsDims)}, init,
                 dimsMap(ctx, rank, outDims), iterators(rank, reductions),
                 [](OpBuilder &nb, Location nl, ValueRange a) {
                   return addF(nb, nl, a[2], mulF(nb, nl, a[0], a[1]));
                 });
}

struct Shapes {
  int64_t B, S, Skv, Hq, Hkv, G, D, Dv;
  Type elt;
  Shapes(Value q, Value k, Value v) {
    auto qt = tensorType(q), kt = tensorType(k), vt = tensorType(v);
    B = qt.getDimSize(0), S = qt.getDimSize(1), Hq = qt.getDimSize(2), D = qt.getDimSize(3);
    Skv = kt.getDimSize(1), Hkv = kt.getDimSize(2), Dv = vt.getDimSize(3);
    G = Hq / Hkv;
    elt = qt.getElementType();
  }
  RankedTensorType grouped(int64_t last) const {
    return RankedTensorType::get({B, S, Hkv, G, last}, elt);
  }
  RankedTensorType scores() const {
    return RankedTensorType::get({B, Hkv, G, S, Skv}, elt);
  }
};

/// Probabilities P[b, h, g, i, j] = softmax_j(scale · q·k + causal mask).
Value probabilities(OpBuilder &b, Location loc, const Shapes &s, Value q5, Value k,
                    bool causal, double scale) {
  // Loops (b, h, g, i, j, d).
  Value raw = contract(b, loc, q5, {0, 3, 1, 2, 5}, k, {0, 4, 1, 5}, {0, 1, 2, 3, 4},
                       {5}, s.scores());
  Value masked = elementwise(b, loc, s.scores(), raw, [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
    Value scaled = mulF(nb, nl, a[0], constantFloat(nb, nl, s.elt, scale));
    if (!causal)
      return scaled;
    Value i = linalg::IndexOp::create(nb, nl, 3), j = linalg::IndexOp::create(nb, nl, 4);
    Value future = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt, j, i);
    Value ninf = constantFloat(nb, nl, s.elt, -std::numeric_limits<double>::infinity());
    return arith::SelectOp::create(nb, nl, future, ninf, scaled);
  });
  return softmax(b, loc, masked, 4);
}

struct AttentionLowering : OpConversionPattern<AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Shapes s(adaptor.getQuery(), adaptor.getKey(), adaptor.getValue());
    Value q5 = reshape(rewriter, loc, adaptor.getQuery(), s.grouped(s.D));
    Value p = probabilities(rewriter, loc, s, q5, adaptor.getKey(), op.getCausal(),
                            op.getScaleOrDefault());
    // out[b, i, h, g, e] = Σ_j P[b, h, g, i, j] v[b, j, h, e]; loops (b, i, h, g, e, j).
    Value out = contract(rewriter, loc, p, {0, 2, 3, 1, 5}, adaptor.getValue(), {0, 5, 2, 4},
                         {0, 1, 2, 3, 4}, {5}, s.grouped(s.Dv));
    rewriter.replaceOp(op, reshape(rewriter, loc, out, op.getType()));
    return success();
  }
};

struct AttentionGradLowering : OpConversionPattern<AttentionGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(AttentionGradOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value k = adaptor.getKey(), v = adaptor.getValue();
    Shapes s(adaptor.getQuery(), k, v);
    double scale = op.getScaleOrDefault();
    Value q5 = reshape(rewriter, loc, adaptor.getQuery(), s.grouped(s.D));
    Value dO5 = reshape(rewriter, loc, adaptor.getGrad(), s.grouped(s.Dv));
    Value o5 = reshape(rewriter, loc, adaptor.getOutput(), s.grouped(s.Dv));
    Value p = probabilities(rewriter, loc, s, q5, k, op.getCausal(), scale);

    // dV[b, j, h, e] = Σ_{g,i} P[b,h,g,i,j] dO[b,i,h,g,e]; loops (b, j, h, e, g, i).
    Value dv = contract(rewriter, loc, p, {0, 2, 4, 5, 1}, dO5, {0, 5, 2, 4, 3},
                        {0, 1, 2, 3}, {4, 5}, tensorType(v));
    // dP[b,h,g,i,j] = Σ_e dO[b,i,h,g,e] v[b,j,h,e]; loops (b, h, g, i, j, e).
    Value dp = contract(rewriter, loc, dO5, {0, 3, 1, 2, 5}, v, {0, 4, 1, 5},
                        {0, 1, 2, 3, 4}, {5}, s.scores());
    // delta[b,h,g,i] = Σ_e dO · O; loops (b, h, g, i, e).
    Value delta = contract(rewriter, loc, dO5, {0, 3, 1, 2, 4}, o5, {0, 3, 1, 2, 4},
                           {0, 1, 2, 3}, {4}, RankedTensorType::get({s.B, s.Hkv, s.G, s.S}, s.elt));
    // dS = scale · P ∘ (dP − delta)
    Value ds = rowwise(rewriter, loc, s.scores(), 4, {p, dp}, delta, {},
                       [&](OpBuilder &b, Location l, ValueRange a) {
                         Value d = mulF(b, l, a[0], subF(b, l, a[1], a[2]));
                         return mulF(b, l, d, constantFloat(b, l, s.elt, scale));
                       });
    // dQ[b,i,h,g,d] = Σ_j dS[b,h,g,i,j] k[b,j,h,d]; loops (b, i, h, g, d, j).
    Value dq = contract(rewriter, loc, ds, {0, 2, 3, 1, 5}, k, {0, 5, 2, 4},
                        {0, 1, 2, 3, 4}, {5}, s.grouped(s.D));
    // dK[b,j,h,d] = Σ_{g,i} dS[b,h,g,i,j] q[b,i,h,g,d]; loops (b, j, h, d, g, i).
    Value dk = contract(rewriter, loc, ds, {0, 2, 4, 5, 1}, q5, {0, 5, 2, 4, 3},
                        {0, 1, 2, 3}, {4, 5}, tensorType(k));
    rewriter.replaceOp(op, {reshape(rewriter, loc, dq, op.getQuery().getType()), dk, dv});
    return success();
  }
};

} // namespace

void mlir::tg::populateTGAttentionToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<AttentionLowering, AttentionGradLowering>(patterns.getContext());
}
