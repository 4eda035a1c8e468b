//===- CachedAttention.cpp - tg.attention at positions → linalg -----------===//
//
// Generation's attention: the queries of one step (a prompt chunk, or one
// token) against a KV cache indexed by position. Every query scores the
// whole cache, masked past its position (and before its window), so the
// work does not depend on the run-time positions: no key tiles are skipped
// and no FlashAttention state is kept. The scores of a decode step are one
// row per query head.
//
//===----------------------------------------------------------------------===//

#include "AttentionTiles.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;
using namespace mlir::tg::lowering::attention;

std::pair<Value, Value> attention::cachedAttention(
    OpBuilder &b, Location loc, const Layout &l, const Mask &mask,
    const Scoring &score, Value query, Value key, Value value,
    Value positions) {
  MLIRContext *ctx = b.getContext();
  Value q = l.queryRows(b, loc, query);                         // [N, R, D]
  Value kT = transposeMatrices(b, loc, l.keyRows(b, loc, key)); // [N, D, L]
  Value v = l.keyRows(b, loc, value);                           // [N, L, Dv]
  Value raw = batchMatmul(b, loc, q, kT);                       // [N, R, L]
  RankedTensorType type = tensorType(raw);
  Type elt = type.getElementType();
  // Row r of batch entry n is query token r / G of sequence n / Hkv; key
  // column c is cache position c.
  Value scores = generic(
      b, loc, {}, {}, raw, AffineMap::getMultiDimIdentityMap(3, ctx),
      iterators(3), [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value s = mulF(nb, nl, a[0], constantFloat(nb, nl, elt, score.scale));
        if (score.softcap)
          s = softcapped(nb, nl, s, *score.softcap);
        if (!mask.causal)
          return s;
        Value n = linalg::IndexOp::create(nb, nl, 0),
              r = linalg::IndexOp::create(nb, nl, 1),
              c = linalg::IndexOp::create(nb, nl, 2);
        Value sequence = arith::DivUIOp::create(
            nb, nl, n, arith::ConstantIndexOp::create(nb, nl, l.Hkv));
        Value token = arith::DivUIOp::create(
            nb, nl, r, arith::ConstantIndexOp::create(nb, nl, l.G));
        Value at = arith::IndexCastOp::create(
            nb, nl, nb.getIndexType(),
            tensor::ExtractOp::create(nb, nl, positions,
                                      ValueRange{sequence, token}));
        Value hidden =
            arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sgt, c, at);
        if (mask.window) {
          Value reach = arith::AddIOp::create(
              nb, nl, c, arith::ConstantIndexOp::create(nb, nl, *mask.window));
          hidden = arith::OrIOp::create(
              nb, nl, hidden,
              arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sle, reach,
                                    at));
        }
        return arith::SelectOp::create(nb, nl, hidden,
                                       constantFloat(nb, nl, elt, kNegInf), s);
      });
  Value max = reduceAxis(b, loc, scores, 2, kNegInf,
                         [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                           return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
                         });
  Value exps = rowwise(b, loc, type, 2, scores, max, {},
                       [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                         return math::ExpOp::create(nb, nl,
                                                    subF(nb, nl, a[0], a[1]));
                       });
  Value sum = reduceAxis(b, loc, exps, 2, 0.0, sumOf(first));
  Value weighted = batchMatmul(b, loc, exps, v); // [N, R, Dv]
  Value out = rowwise(b, loc, tensorType(weighted), 2, weighted, sum, {},
                      [](OpBuilder &nb, Location nl, ValueRange a) {
                        return divF(nb, nl, a[0], a[1]);
                      });
  Value lse = elementwise(
      b, loc, tensorType(max), {max, sum},
      [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        return addF(nb, nl, a[0], math::LogOp::create(nb, nl, a[1]));
      });
  return {l.fromQueryRows(b, loc, out), l.fromStatRows(b, loc, lse)};
}
