//===- Attention.cpp - tg.attention and its gradient → linalg -------------===//
//
// Attention as batched matrix products over (batch, key/value head) pairs:
// queries of the G = Hq / Hkv heads sharing a key/value head are stacked as
// rows ([B·Hkv, G·S, D]), so grouped-query attention needs no index
// arithmetic and every product is a linalg.batch_matmul on head-major,
// contiguous operands (the transposes into that layout are O(B·S·H·D)
// copies). With a chunk budget (convert-tg-to-linalg's
// attention-chunk-bytes) the query rows are processed a chunk at a time, so
// only [B·Hkv, chunk, Skv] scores exist: memory linear in S. Every query row
// sees all its keys inside its chunk, so each chunk's softmax is exact (no
// online rescaling). The gradient recomputes the probabilities instead of
// reading stored ones.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Support/Chunking.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
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

  /// Query rows per chunk: scores of at most `chunkBytes` ([B·Hkv, rows,
  /// Skv]) and at least 64 rows, balanced; all rows when `chunkBytes` is 0.
  int64_t chunkRows(int64_t chunkBytes) const {
    int64_t rows = G * S;
    if (chunkBytes <= 0)
      return rows;
    int64_t bytesPerRow =
        B * Hkv * Skv * std::max<int64_t>(1, elt.getIntOrFloatBitWidth() / 8);
    return tgc::balancedChunkSize(rows, bytesPerRow, chunkBytes, 64);
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

/// P = softmax_j(scale · Q·Kᵀ + causal mask) as [B·Hkv, R, Skv] for query
/// rows [rowOffset, rowOffset + R) of the stacked [B·Hkv, G·S, D] queries;
/// `kT` is [B·Hkv, D, Skv].
Value probabilities(OpBuilder &b, Location loc, const Layout &l, Value qRows,
                    Value kT, bool causal, double scale,
                    OpFoldResult rowOffset) {
  Value raw = batchMatmul(b, loc, qRows, kT);
  Value offset = getValueOrCreateConstantIndexOp(b, loc, rowOffset);
  Value masked = elementwise(
      b, loc, tensorType(raw), raw,
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value scaled = mulF(nb, nl, a[0], constantFloat(nb, nl, l.elt, scale));
        if (!causal)
          return scaled;
        // Row r of the stacked queries is position r mod S.
        Value r = arith::AddIOp::create(
                  nb, nl, linalg::IndexOp::create(nb, nl, 1), offset),
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

/// out += a · b per batch entry, accumulated into `init`.
Value batchMatmulInto(OpBuilder &b, Location loc, Value lhs, Value rhs,
                      Value init) {
  return linalg::BatchMatmulOp::create(b, loc, ValueRange{lhs, rhs},
                                       ValueRange{init})
      .getResult(0);
}

/// out[:, rows, :] = a · b written into those rows of `dest`.
Value batchMatmulIntoRows(OpBuilder &b, Location loc, Value lhs, Value rhs,
                          Value dest, OpFoldResult offset, int64_t size) {
  return computeIntoSlice(b, loc, 1, dest, offset, size, [&](Value zeroed) {
    return batchMatmulInto(b, loc, lhs, rhs, zeroed);
  });
}

struct AttentionLowering : OpConversionPattern<AttentionOp> {
  AttentionLowering(MLIRContext *ctx, int64_t chunkBytes)
      : OpConversionPattern(ctx), chunkBytes(chunkBytes) {}
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Layout l(adaptor.getQuery(), adaptor.getKey(), adaptor.getValue());
    Value q = l.queryRows(rewriter, loc, adaptor.getQuery());
    Value k = l.keyRows(rewriter, loc, adaptor.getKey());
    Value v = l.keyRows(rewriter, loc, adaptor.getValue());
    Value kT = transposeMatrices(rewriter, loc, k);
    int64_t rows = l.G * l.S;
    int64_t chunk = l.chunkRows(chunkBytes);
    if (chunk == rows) {
      Value p = probabilities(rewriter, loc, l, q, kT, op.getCausal(),
                              op.getScaleOrDefault(), rewriter.getIndexAttr(0));
      rewriter.replaceOp(
          op, l.fromQueryRows(rewriter, loc, batchMatmul(rewriter, loc, p, v)));
      return success();
    }
    Value out = tensor::EmptyOp::create(rewriter, loc,
                                        {l.B * l.Hkv, rows, l.Dv}, l.elt);
    // Query rows a chunk at a time: only [B·Hkv, chunk, Skv] scores exist.
    SmallVector<Value> o = forEachChunk(
        rewriter, loc, rows, chunk, out,
        [&](OpBuilder &b, Location nl, OpFoldResult offset, int64_t size,
            ValueRange args) -> SmallVector<Value> {
          Value qc = sliceDim(b, nl, 1, q, offset, size);
          Value p = probabilities(b, nl, l, qc, kT, op.getCausal(),
                                  op.getScaleOrDefault(), offset);
          return {batchMatmulIntoRows(b, nl, p, v, args[0], offset, size)};
        });
    rewriter.replaceOp(op, l.fromQueryRows(rewriter, loc, o[0]));
    return success();
  }
  int64_t chunkBytes;
};

struct AttentionGradLowering : OpConversionPattern<AttentionGradOp> {
  AttentionGradLowering(MLIRContext *ctx, int64_t chunkBytes)
      : OpConversionPattern(ctx), chunkBytes(chunkBytes) {}
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
    Value kT = transposeMatrices(rewriter, loc, k);
    Value vT = transposeMatrices(rewriter, loc, v);
    int64_t rows = l.G * l.S, bh = l.B * l.Hkv;
    int64_t chunk = l.chunkRows(chunkBytes);
    SmallVector<Value> init{
        tensor::EmptyOp::create(rewriter, loc, {bh, rows, l.D}, l.elt),
        filled(rewriter, loc, tensorType(k), 0.0),
        filled(rewriter, loc, tensorType(v), 0.0)};
    // Query rows a chunk at a time, the probabilities recomputed per chunk:
    // dQ's rows are written, dK and dV accumulate over the chunks.
    SmallVector<Value> grads = forEachChunk(
        rewriter, loc, rows, chunk, init,
        [&](OpBuilder &b, Location nl, OpFoldResult offset, int64_t size,
            ValueRange args) -> SmallVector<Value> {
          Value qc = sliceDim(b, nl, 1, q, offset, size);
          Value dOc = sliceDim(b, nl, 1, dO, offset, size);
          Value oc = sliceDim(b, nl, 1, o, offset, size);
          Value p =
              probabilities(b, nl, l, qc, kT, op.getCausal(), scale, offset);
          // dV += Pᵀ·dO and dP = dO·Vᵀ (a query group's rows sum into their
          // head).
          Value dv =
              batchMatmulInto(b, nl, transposeMatrices(b, nl, p), dOc, args[2]);
          Value dp = batchMatmul(b, nl, dOc, vT);
          // delta = rowsum(dO ∘ O), dS = scale · P ∘ (dP − delta).
          Value delta =
              reduceAxis(b, nl, {dOc, oc}, 2, 0.0,
                         sumOf([](OpBuilder &nb, Location l2, ValueRange a) {
                           return mulF(nb, l2, a[0], a[1]);
                         }));
          Value ds = rowwise(
              b, nl, tensorType(p), 2, {p, dp}, delta, {},
              [&](OpBuilder &nb, Location l2, ValueRange a) {
                Value d = mulF(nb, l2, a[0], subF(nb, l2, a[1], a[2]));
                return mulF(nb, l2, d, constantFloat(nb, l2, l.elt, scale));
              });
          // dQ rows = dS·K, dK += dSᵀ·Q.
          Value dq = batchMatmulIntoRows(b, nl, ds, k, args[0], offset, size);
          Value dk =
              batchMatmulInto(b, nl, transposeMatrices(b, nl, ds), qc, args[1]);
          return {dq, dk, dv};
        });
    rewriter.replaceOp(op, {l.fromQueryRows(rewriter, loc, grads[0]),
                            l.fromKeyRows(rewriter, loc, grads[1]),
                            l.fromKeyRows(rewriter, loc, grads[2])});
    return success();
  }
  int64_t chunkBytes;
};

} // namespace

void mlir::tg::populateTGAttentionToLinalgPatterns(RewritePatternSet &patterns,
                                                   int64_t chunkBytes) {
  patterns.add<AttentionLowering, AttentionGradLowering>(patterns.getContext(),
                                                         chunkBytes);
}
