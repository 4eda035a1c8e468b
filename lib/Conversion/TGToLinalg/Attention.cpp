//===- Attention.cpp - tg.attention and its gradient → linalg -------------===//
//
// Attention as batched matrix products over (batch, key/value head) pairs:
// queries of the G = Hq / Hkv heads sharing a key/value head are stacked as
// rows ([B·Hkv, G·S, D]), so grouped-query attention needs no index
// arithmetic and every product is a linalg.batch_matmul on head-major,
// contiguous operands (the transposes into that layout are O(B·S·H·D)
// copies). Scores are materialised per (batch, head); the gradient
// recomputes them instead of reading stored probabilities.
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

Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  RankedTensorType t = tensorType(v);
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  Value init = tensor::EmptyOp::create(b, loc, shape, t.getElementType());
  return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
}

/// out[n] = a[n] · b[n] for every batch entry n: a named
/// linalg.batch_matmul on contiguous operands.
Value batchMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  RankedTensorType a = tensorType(lhs), bt = tensorType(rhs);
  auto outType = RankedTensorType::get(
      {a.getDimSize(0), a.getDimSize(1), bt.getDimSize(2)}, a.getElementType());
  Value init = filled(b, loc, outType, 0.0);
  return linalg::BatchMatmulOp::create(b, loc, ValueRange{lhs, rhs},
                                       ValueRange{init})
      .getResult(0);
}

/// Swaps the two matrix dimensions of [N, R, C].
Value transposeMatrices(OpBuilder &b, Location loc, Value v) {
  return transpose(b, loc, v, {0, 2, 1});
}

struct Layout {
  int64_t B, S, Skv, Hq, Hkv, G, D, Dv;
  Type elt;
  Layout(Value q, Value k, Value v) {
    auto qt = tensorType(q), kt = tensorType(k), vt = tensorType(v);
    B = qt.getDimSize(0), S = qt.getDimSize(1), Hq = qt.getDimSize(2),
    D = qt.getDimSize(3);
    Skv = kt.getDimSize(1), Hkv = kt.getDimSize(2), Dv = vt.getDimSize(3);
    G = Hq / Hkv;
    elt = qt.getElementType();
  }

  /// Query-shaped [B, S, Hq, E] → [B·Hkv, G·S, E].
  Value queryRows(OpBuilder &b, Location loc, Value x) const {
    int64_t e = tensorType(x).getDimSize(3);
    Value x5 =
        reshape(b, loc, x, RankedTensorType::get({B, S, Hkv, G, e}, elt));
    Value hm = transpose(b, loc, x5, {0, 2, 3, 1, 4}); // [B, Hkv, G, S, E]
    return reshape(b, loc, hm, RankedTensorType::get({B * Hkv, G * S, e}, elt));
  }
  /// [B·Hkv, G·S, E] → query-shaped [B, S, Hq, E].
  Value fromQueryRows(OpBuilder &b, Location loc, Value x) const {
    int64_t e = tensorType(x).getDimSize(2);
    Value hm =
        reshape(b, loc, x, RankedTensorType::get({B, Hkv, G, S, e}, elt));
    Value bs = transpose(b, loc, hm, {0, 3, 1, 2, 4}); // [B, S, Hkv, G, E]
    return reshape(b, loc, bs, RankedTensorType::get({B, S, Hq, e}, elt));
  }
  /// Key/value-shaped [B, Skv, Hkv, E] → [B·Hkv, Skv, E].
  Value keyRows(OpBuilder &b, Location loc, Value x) const {
    int64_t e = tensorType(x).getDimSize(3);
    Value hm = transpose(b, loc, x, {0, 2, 1, 3});
    return reshape(b, loc, hm, RankedTensorType::get({B * Hkv, Skv, e}, elt));
  }
  Value fromKeyRows(OpBuilder &b, Location loc, Value x) const {
    int64_t e = tensorType(x).getDimSize(2);
    Value hm = reshape(b, loc, x, RankedTensorType::get({B, Hkv, Skv, e}, elt));
    return transpose(b, loc, hm, {0, 2, 1, 3});
  }
};

/// P = softmax_j(scale · Q·Kᵀ + causal mask) as [B·Hkv, G·S, Skv].
Value probabilities(OpBuilder &b, Location loc, const Layout &l, Value qRows,
                    Value kRows, bool causal, double scale) {
  Value raw = batchMatmul(b, loc, qRows, transposeMatrices(b, loc, kRows));
  Value masked = elementwise(
      b, loc, tensorType(raw), raw,
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value scaled = mulF(nb, nl, a[0], constantFloat(nb, nl, l.elt, scale));
        if (!causal)
          return scaled;
        // Row r of the stacked queries is position r mod S.
        Value r = linalg::IndexOp::create(nb, nl, 1),
              j = linalg::IndexOp::create(nb, nl, 2);
        Value i = arith::RemUIOp::create(
            nb, nl, r, arith::ConstantIndexOp::create(nb, nl, l.S));
        Value future =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt, j, i);
        Value ninf = constantFloat(nb, nl, l.elt,
                                   -std::numeric_limits<double>::infinity());
        return arith::SelectOp::create(nb, nl, future, ninf, scaled);
      });
  return softmax(b, loc, masked, 2);
}

struct AttentionLowering : OpConversionPattern<AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Layout l(adaptor.getQuery(), adaptor.getKey(), adaptor.getValue());
    Value q = l.queryRows(rewriter, loc, adaptor.getQuery());
    Value k = l.keyRows(rewriter, loc, adaptor.getKey());
    Value v = l.keyRows(rewriter, loc, adaptor.getValue());
    Value p = probabilities(rewriter, loc, l, q, k, op.getCausal(),
                            op.getScaleOrDefault());
    rewriter.replaceOp(
        op, l.fromQueryRows(rewriter, loc, batchMatmul(rewriter, loc, p, v)));
    return success();
  }
};

struct AttentionGradLowering : OpConversionPattern<AttentionGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AttentionGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Layout l(adaptor.getQuery(), adaptor.getKey(), adaptor.getValue());
    double scale = op.getScaleOrDefault();
    Value q = l.queryRows(rewriter, loc, adaptor.getQuery());
    Value k = l.keyRows(rewriter, loc, adaptor.getKey());
    Value v = l.keyRows(rewriter, loc, adaptor.getValue());
    Value dO = l.queryRows(rewriter, loc, adaptor.getGrad());
    Value o = l.queryRows(rewriter, loc, adaptor.getOutput());
    Value p = probabilities(rewriter, loc, l, q, k, op.getCausal(), scale);

    // dV = Pᵀ·dO and dP = dO·Vᵀ (a query group's rows sum into their head).
    Value dv =
        batchMatmul(rewriter, loc, transposeMatrices(rewriter, loc, p), dO);
    Value dp =
        batchMatmul(rewriter, loc, dO, transposeMatrices(rewriter, loc, v));
    // delta = rowsum(dO ∘ O), dS = scale · P ∘ (dP − delta).
    Value delta = reduceAxis(rewriter, loc, {dO, o}, 2, 0.0,
                             sumOf([](OpBuilder &b, Location nl, ValueRange a) {
                               return mulF(b, nl, a[0], a[1]);
                             }));
    Value ds =
        rowwise(rewriter, loc, tensorType(p), 2, {p, dp}, delta, {},
                [&](OpBuilder &b, Location nl, ValueRange a) {
                  Value d = mulF(b, nl, a[0], subF(b, nl, a[1], a[2]));
                  return mulF(b, nl, d, constantFloat(b, nl, l.elt, scale));
                });
    // dQ = dS·K, dK = dSᵀ·Q.
    Value dq = batchMatmul(rewriter, loc, ds, k);
    Value dk =
        batchMatmul(rewriter, loc, transposeMatrices(rewriter, loc, ds), q);
    rewriter.replaceOp(op, {l.fromQueryRows(rewriter, loc, dq),
                            l.fromKeyRows(rewriter, loc, dk),
                            l.fromKeyRows(rewriter, loc, dv)});
    return success();
  }
};

} // namespace

void mlir::tg::populateTGAttentionToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionLowering, AttentionGradLowering>(patterns.getContext());
}
