//===- AttentionTiles.cpp - FlashAttention tiles of tg.attention ----------===//
//
// The tile helpers the forward and the backward share (AttentionTiles.h).
//
//===----------------------------------------------------------------------===//

#include "AttentionTiles.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;

namespace mlir::tg::lowering::attention {

Tiling tilingOf(Operation *op, const Layout &l) {
  int64_t whole = std::max(l.S, l.Skv);
  auto tiling =
      op->getAttrOfType<AttentionTilingAttr>(TGDialect::kTilingAttrName);
  if (!tiling)
    return {whole, 0, false};
  int64_t tile = tiling.getTile();
  return {tile > 0 ? std::min(tile, whole) : whole,
          std::min(tiling.getTaskTile(), whole),
          tiling.getTransposedOperands()};
}

Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  RankedTensorType t = tensorType(v);
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  Value init = tensor::EmptyOp::create(b, loc, shape, t.getElementType());
  return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
}

Value batchMatmulInto(OpBuilder &b, Location loc, Value lhs, Value rhs,
                      Value init) {
  return linalg::BatchMatmulOp::create(b, loc, ValueRange{lhs, rhs},
                                       ValueRange{init})
      .getResult(0);
}

Value batchMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  RankedTensorType a = tensorType(lhs), bt = tensorType(rhs);
  auto outType = RankedTensorType::get(
      {a.getDimSize(0), a.getDimSize(1), bt.getDimSize(2)}, a.getElementType());
  return batchMatmulInto(b, loc, lhs, rhs, filled(b, loc, outType, 0.0));
}

Value transposeMatrices(OpBuilder &b, Location loc, Value v) {
  return transpose(b, loc, v, {0, 2, 1});
}

OpFoldResult scaled(OpBuilder &b, Location loc, OpFoldResult offset,
                    int64_t factor) {
  if (std::optional<int64_t> c = getConstantIntValue(offset))
    return b.getIndexAttr(*c * factor);
  return arith::MulIOp::create(b, loc, llvm::cast<Value>(offset),
                               arith::ConstantIndexOp::create(b, loc, factor))
      .getResult();
}

Value updateRows(OpBuilder &b, Location loc, Value dest, ValueRange rows,
                 BodyFn body) {
  int64_t rank = tensorType(dest).getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps(rows.size(), dimsMap(ctx, rank, {0, 1}));
  return generic(b, loc, rows, maps, dest,
                 AffineMap::getMultiDimIdentityMap(rank, ctx), iterators(rank),
                 body);
}

Value addRowSums(OpBuilder &b, Location loc, Value x, Value acc) {
  MLIRContext *ctx = b.getContext();
  return generic(b, loc, x, AffineMap::getMultiDimIdentityMap(3, ctx), acc,
                 dimsMap(ctx, 3, {0, 1}), iterators(3, {2}), sumOf(first));
}

SmallVector<Value> forEachKeyTile(OpBuilder &b, Location loc, const Layout &l,
                                  const Mask &mask, int64_t tile,
                                  OpFoldResult offset, int64_t size,
                                  ValueRange state, KeyTileBody body) {
  auto unmasked = [&](OpBuilder &nb, Location nl, OpFoldResult keyOffset,
                      int64_t keys, ValueRange args) {
    return body(nb, nl, keyOffset, keys, TileMask(), args);
  };
  if (mask.causal && mask.window) {
    int64_t w = *mask.window;
    TileMask diagonal;
    diagonal.future = true;
    if (w < size)
      diagonal.window = w;
    SmallVector<Value> values = body(b, loc, offset, size, diagonal, state);
    int64_t far = (w + tile - 2) / tile;
    int64_t near = w >= size ? std::min(far, (w - size) / tile) : 0;
    values = forEachFullChunkIn(
        b, loc, positionsBefore(b, loc, offset, far * tile),
        positionsBefore(b, loc, offset, near * tile), tile, values,
        [&](OpBuilder &nb, Location nl, OpFoldResult keyOffset, int64_t keys,
            ValueRange args) {
          TileMask edge;
          edge.window = w;
          edge.lag = arith::SubIOp::create(
              nb, nl, getValueOrCreateConstantIndexOp(nb, nl, offset),
              getValueOrCreateConstantIndexOp(nb, nl, keyOffset));
          return body(nb, nl, keyOffset, keys, edge, args);
        });
    return forEachFullChunkIn(b, loc,
                              positionsBefore(b, loc, offset, near * tile),
                              offset, tile, values, unmasked);
  }
  OpFoldResult end = mask.causal ? offset : b.getIndexAttr(l.Skv / tile * tile);
  SmallVector<Value> values =
      forEachFullChunk(b, loc, end, tile, state, unmasked);
  if (mask.causal) {
    TileMask diagonal;
    diagonal.future = true;
    return body(b, loc, offset, size, diagonal, values);
  }
  if (int64_t rest = l.Skv % tile)
    values = body(b, loc, end, rest, TileMask(), values);
  return values;
}

Value scores(OpBuilder &b, Location loc, const Layout &l, Value qTile,
             Value kTTile, const Scoring &score, const TileMask &mask) {
  Value raw = batchMatmul(b, loc, qTile, kTTile);
  RankedTensorType type = tensorType(raw);
  MLIRContext *ctx = b.getContext();
  return generic(
      b, loc, {}, {}, raw, AffineMap::getMultiDimIdentityMap(3, ctx),
      iterators(3), [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Type elt = type.getElementType();
        Value s = mulF(nb, nl, a[0], constantFloat(nb, nl, elt, score.scale));
        if (score.softcap)
          s = softcapped(nb, nl, s, *score.softcap);
        if (!mask.hidesAny())
          return s;
        Value r = linalg::IndexOp::create(nb, nl, 1),
              c = linalg::IndexOp::create(nb, nl, 2);
        Value position = arith::DivUIOp::create(
            nb, nl, r, arith::ConstantIndexOp::create(nb, nl, l.G));
        Value hidden;
        if (mask.future)
          hidden = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt, c,
                                         position);
        if (mask.window) {
          // Key c is hidden when c + W <= r/G + lag (key positions count
          // from the key tile, lag positions before the query tile).
          Value since = mask.lag
                            ? arith::AddIOp::create(nb, nl, position, mask.lag)
                                  .getResult()
                            : position;
          Value reach = arith::AddIOp::create(
              nb, nl, c, arith::ConstantIndexOp::create(nb, nl, *mask.window));
          Value old = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sle,
                                            reach, since);
          hidden = hidden
                       ? arith::OrIOp::create(nb, nl, hidden, old).getResult()
                       : old;
        }
        return arith::SelectOp::create(
            nb, nl, hidden,
            constantFloat(nb, nl, type.getElementType(), kNegInf), s);
      });
}

Value sliceOf(OpBuilder &b, Location loc, Value source,
              ArrayRef<OpFoldResult> offsets, ArrayRef<int64_t> sizes,
              ArrayRef<int64_t> dropped) {
  RankedTensorType type = tensorType(source);
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> sizeAttrs, strides;
  for (auto [d, size] : llvm::enumerate(sizes)) {
    sizeAttrs.push_back(b.getIndexAttr(size));
    strides.push_back(b.getIndexAttr(1));
    if (!llvm::is_contained(dropped, static_cast<int64_t>(d)))
      shape.push_back(size);
  }
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), source,
      offsets, sizeAttrs, strides);
}

Value regroup(OpBuilder &b, Location loc, Value v,
              ArrayRef<ReassociationIndices> collapse,
              ArrayRef<ReassociationIndices> expand, RankedTensorType type) {
  Value mid = tensor::CollapseShapeOp::create(b, loc, v, collapse);
  return tensor::ExpandShapeOp::create(b, loc, type, mid, expand);
}

Value contiguousCopy(OpBuilder &b, Location loc, Value v) {
  RankedTensorType type = tensorType(v);
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::CopyOp::create(b, loc, v, init).getResult(0);
}

Value matrixAsBatch(OpBuilder &b, Location loc, Value v) {
  RankedTensorType t = tensorType(v);
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({1, t.getDimSize(0), t.getDimSize(1)},
                            t.getElementType()),
      v, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

Value byGroup(OpBuilder &b, Location loc, const Layout &l, Value x, int64_t e) {
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({l.B, l.S, l.Hkv, l.G, e}, l.elt), x,
      ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
}

OpFoldResult positionsBefore(OpBuilder &b, Location loc, OpFoldResult offset,
                             int64_t back) {
  if (back == 0)
    return offset;
  if (std::optional<int64_t> c = getConstantIntValue(offset))
    return b.getIndexAttr(std::max<int64_t>(0, *c - back));
  Value v = arith::SubIOp::create(b, loc, llvm::cast<Value>(offset),
                                  arith::ConstantIndexOp::create(b, loc, back));
  return arith::MaxSIOp::create(b, loc, v,
                                arith::ConstantIndexOp::create(b, loc, 0))
      .getResult();
}

} // namespace mlir::tg::lowering::attention
