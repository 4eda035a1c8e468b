//===- Attention.cpp - tg.attention and its gradient → linalg -------------===//
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
// The tile size comes from a byte budget for one score tile
// (convert-tg-to-linalg's attention-tile-bytes); with no budget the whole
// sequence is one tile (the same code, no loops).
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
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

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  RankedTensorType t = tensorType(v);
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  Value init = tensor::EmptyOp::create(b, loc, shape, t.getElementType());
  return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
}

/// out[n] = a[n] · b[n] for every batch entry n, accumulated into `init`: a
/// named linalg.batch_matmul on row-contiguous operands.
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

/// Swaps the two matrix dimensions of [N, R, C].
Value transposeMatrices(OpBuilder &b, Location loc, Value v) {
  return transpose(b, loc, v, {0, 2, 1});
}

/// `offset` · `factor` as an index.
OpFoldResult scaled(OpBuilder &b, Location loc, OpFoldResult offset,
                    int64_t factor) {
  if (std::optional<int64_t> c = getConstantIntValue(offset))
    return b.getIndexAttr(*c * factor);
  return arith::MulIOp::create(b, loc, llvm::cast<Value>(offset),
                               arith::ConstantIndexOp::create(b, loc, factor))
      .getResult();
}

/// `dest` with the elements of each row updated in place by `body(row
/// values..., element)`: a generic writing into `dest` itself, so that the
/// update bufferizes without a copy. `rows` are [N, R] tensors read per row
/// of the [N, R, C] (or [N, R]) `dest`.
Value updateRows(OpBuilder &b, Location loc, Value dest, ValueRange rows,
                 BodyFn body) {
  int64_t rank = tensorType(dest).getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps(rows.size(), dimsMap(ctx, rank, {0, 1}));
  return generic(b, loc, rows, maps, dest,
                 AffineMap::getMultiDimIdentityMap(rank, ctx), iterators(rank),
                 body);
}

/// `acc` + the row sums of [N, R, C] `x`, reduced into `acc` ([N, R]).
Value addRowSums(OpBuilder &b, Location loc, Value x, Value acc) {
  MLIRContext *ctx = b.getContext();
  return generic(b, loc, x, AffineMap::getMultiDimIdentityMap(3, ctx), acc,
                 dimsMap(ctx, 3, {0, 1}), iterators(3, {2}), sumOf(first));
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

  /// Positions per tile (of queries and of keys): a [B·Hkv, T·G, T] score
  /// tile of at most `tileBytes`, a multiple of 16 when above it; the
  /// whole sequence when that fits or `tileBytes` is 0.
  int64_t tilePositions(int64_t tileBytes) const {
    int64_t whole = std::max(S, Skv);
    if (tileBytes <= 0)
      return whole;
    int64_t eltBytes = std::max<int64_t>(1, elt.getIntOrFloatBitWidth() / 8);
    auto t = static_cast<int64_t>(
        std::sqrt(static_cast<double>(tileBytes) /
                  static_cast<double>(B * Hkv * G * eltBytes)));
    if (t > 16)
      t -= t % 16;
    return std::clamp<int64_t>(t, 16, whole);
  }

  /// Positions per tile of a task (one sequence and key/value head): a
  /// [T·G, T] score tile of at most `taskBytes`, a multiple of 16 when
  /// above it; the whole sequence when that fits.
  int64_t taskTilePositions(int64_t taskBytes) const {
    int64_t whole = std::max(S, Skv);
    int64_t eltBytes = std::max<int64_t>(1, elt.getIntOrFloatBitWidth() / 8);
    auto t = static_cast<int64_t>(std::sqrt(static_cast<double>(taskBytes) /
                                            static_cast<double>(G * eltBytes)));
    if (t > 16)
      t -= t % 16;
    return std::clamp<int64_t>(t, 16, whole);
  }

  /// Query-shaped [B, S, Hq, E] → [B·Hkv, S·G, E].
  Value queryRows(OpBuilder &b, Location loc, Value x) const {
    int64_t e = tensorType(x).getDimSize(3);
    Value x5 =
        reshape(b, loc, x, RankedTensorType::get({B, S, Hkv, G, e}, elt));
    Value hm = transpose(b, loc, x5, {0, 2, 1, 3, 4}); // [B, Hkv, S, G, E]
    return reshape(b, loc, hm, RankedTensorType::get({B * Hkv, S * G, e}, elt));
  }
  /// [B·Hkv, S·G, E] → query-shaped [B, S, Hq, E].
  Value fromQueryRows(OpBuilder &b, Location loc, Value x) const {
    int64_t e = tensorType(x).getDimSize(2);
    Value hm =
        reshape(b, loc, x, RankedTensorType::get({B, Hkv, S, G, e}, elt));
    Value bs = transpose(b, loc, hm, {0, 2, 1, 3, 4}); // [B, S, Hkv, G, E]
    return reshape(b, loc, bs, RankedTensorType::get({B, S, Hq, e}, elt));
  }
  /// Per-query-row [B, S, Hq] → [B·Hkv, S·G]: the query layout of one
  /// element per row.
  Value statRows(OpBuilder &b, Location loc, Value x) const {
    Value rows = queryRows(
        b, loc, reshape(b, loc, x, RankedTensorType::get({B, S, Hq, 1}, elt)));
    return reshape(b, loc, rows, RankedTensorType::get({B * Hkv, S * G}, elt));
  }
  Value fromStatRows(OpBuilder &b, Location loc, Value x) const {
    Value rows =
        reshape(b, loc, x, RankedTensorType::get({B * Hkv, S * G, 1}, elt));
    return reshape(b, loc, fromQueryRows(b, loc, rows),
                   RankedTensorType::get({B, S, Hq}, elt));
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

/// Which keys each query sees: tg.attention's `causal` and `window`.
struct Mask {
  bool causal = false;
  std::optional<int64_t> window;
};

/// How a query-key product becomes a score: times `scale`, then with a
/// `softcap` c mapped to c · tanh(s / c).
struct Scoring {
  double scale;
  std::optional<double> softcap;
};

template <typename OpTy>
Scoring scoringOf(OpTy op) {
  return {op.getScaleOrDefault(), softcapOf(op)};
}

/// The window of tg.attention or tg.attention_grad, if any.
template <typename OpTy>
std::optional<int64_t> windowOf(OpTy op) {
  if (std::optional<uint64_t> w = op.getWindow())
    return static_cast<int64_t>(*w);
  return std::nullopt;
}

/// What one key tile of a query tile hides: with `future`, keys after the
/// query (the diagonal tile, query and key tiles starting together); with
/// a `window` W, keys at or before the query's position − W, the key tile
/// starting `lag` positions before the query tile.
struct TileMask {
  bool future = false;
  std::optional<int64_t> window;
  Value lag;
  bool hidesAny() const { return future || window; }
};

/// One key tile of a query tile: keys [offset, offset + size), hiding what
/// `mask` says.
using KeyTileBody = function_ref<SmallVector<Value>(
    OpBuilder &, Location, OpFoldResult offset, int64_t size,
    const TileMask &mask, ValueRange state)>;

/// max(0, `offset` − `back`) as an index.
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

/// Visits the key tiles a query tile of `size` positions at `offset` sees,
/// threading `state` through them. Causal: the tiles left of the diagonal
/// (an scf.for up to `offset`, none for the first query tile), then the
/// diagonal tile. With a window W: the diagonal tile, then the key tiles
/// j = far..near+1 tiles back (the first of them holds the first query's
/// oldest key; they cross some query's window edge, masked), then those
/// j = near..1 back (inside every query's window). Otherwise every key
/// tile: the full ones, then the remainder.
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
    return forEachFullChunkIn(b, loc, positionsBefore(b, loc, offset, near * tile),
                         offset, tile, values, unmasked);
  }
  OpFoldResult end =
      mask.causal ? offset : b.getIndexAttr(l.Skv / tile * tile);
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

/// The scores (scale · Q·Kᵀ, soft-capped where `score` says) for a query
/// tile's rows `qTile` ([N, R, D]) and a key tile's `kTTile` ([N, D, keys]),
/// −inf where `mask` hides a key: local row r is query position r / G of
/// the tile, local key c key position c of the key tile.
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
          Value since =
              mask.lag ? arith::AddIOp::create(nb, nl, position, mask.lag)
                             .getResult()
                       : position;
          Value reach = arith::AddIOp::create(
              nb, nl, c, arith::ConstantIndexOp::create(nb, nl, *mask.window));
          Value old = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::sle,
                                            reach, since);
          hidden = hidden ? arith::OrIOp::create(nb, nl, hidden, old).getResult()
                          : old;
        }
        return arith::SelectOp::create(
            nb, nl, hidden,
            constantFloat(nb, nl, type.getElementType(), kNegInf), s);
      });
}

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
                                   const Mask &mask, const Scoring &score, int64_t tile,
                                   OpFoldResult offset, int64_t size, Value qc,
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

/// A slice of `source` at `offsets` x `sizes` (unit strides), with the
/// dimensions `dropped` (of size 1) left out of its type.
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

/// `v` regrouped: its dimensions collapsed by `collapse`, then expanded by
/// `expand` into `type`. Reshapes through a matrix rather than through one
/// flat dimension, which the targets' views keep as strided views.
Value regroup(OpBuilder &b, Location loc, Value v,
              ArrayRef<ReassociationIndices> collapse,
              ArrayRef<ReassociationIndices> expand, RankedTensorType type) {
  Value mid = tensor::CollapseShapeOp::create(b, loc, v, collapse);
  return tensor::ExpandShapeOp::create(b, loc, type, mid, expand);
}

/// A contiguous copy of `v` (a strided slice) in a new tensor of its shape.
Value contiguousCopy(OpBuilder &b, Location loc, Value v) {
  RankedTensorType type = tensorType(v);
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::CopyOp::create(b, loc, v, init).getResult(0);
}

/// A task's matrix [R, C] as a batch of one [1, R, C] (an expand: never a
/// reshape through one flat dimension, which would need a copy of a strided
/// slice and which the CPU schedule cannot take for a product operand).
Value matrixAsBatch(OpBuilder &b, Location loc, Value v) {
  RankedTensorType t = tensorType(v);
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({1, t.getDimSize(0), t.getDimSize(1)},
                            t.getElementType()),
      v, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// Query-shaped [B, S, Hq, E] with the heads split into groups:
/// [B, S, Hkv, G, E].
Value byGroup(OpBuilder &b, Location loc, const Layout &l, Value x, int64_t e) {
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({l.B, l.S, l.Hkv, l.G, e}, l.elt), x,
      ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
}

/// The forward as parallel tasks (`task-bytes`): one per
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
                                       const Scoring &score, int64_t tile, Value query,
                                       Value key, Value value) {
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
  AttentionLowering(MLIRContext *ctx, int64_t tileBytes, int64_t taskBytes)
      : OpConversionPattern(ctx), tileBytes(tileBytes), taskBytes(taskBytes) {}
  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Layout l(adaptor.getQuery(), adaptor.getKey(), adaptor.getValue());
    Mask mask{op.getCausal(), windowOf(op)};
    Scoring score = scoringOf(op);
    if (taskBytes > 0) {
      auto [out, lse] = attentionTasks(
          rewriter, loc, l, mask, score, l.taskTilePositions(taskBytes),
          adaptor.getQuery(), adaptor.getKey(), adaptor.getValue());
      rewriter.replaceOp(op, {out, lse});
      return success();
    }
    Value q = l.queryRows(rewriter, loc, adaptor.getQuery());
    Value k = l.keyRows(rewriter, loc, adaptor.getKey());
    Value v = l.keyRows(rewriter, loc, adaptor.getValue());
    Value kT = transposeMatrices(rewriter, loc, k);
    int64_t bh = l.B * l.Hkv, tile = l.tilePositions(tileBytes);
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
  int64_t tileBytes, taskBytes;
};

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
                                 const Mask &mask, const Scoring &score, int64_t tile,
                                 OpFoldResult offset, int64_t size,
                                 const GradTileOperands &t, Value dqRows,
                                 Value dk, Value dv, bool transposedOperands) {
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
        Value p =
            score.softcap
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
              d = mulF(nb, nl2, d,
                       constantFloat(nb, nl2, l.elt, score.scale));
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
                                  const Mask &mask, const Scoring &score, int64_t tile,
                                  const GradTileOperands &whole,
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

/// The gradient as parallel tasks (`task-bytes`): one per (sequence,
/// key/value head), its query tiles in order inside it, because its dK and
/// dV accumulate over them. A task copies its queries, dO, K, Kᵀ and Vᵀ
/// from the sequence's layout into contiguous tensors of its own, keeps
/// its dQ, dK and dV accumulators to itself and writes them into its
/// slices of the gradients in the sequence's layout at the end.
SmallVector<Value> attentionGradTasks(OpBuilder &b, Location loc,
                                      const Layout &l, const Mask &mask,
                                      const Scoring &score, int64_t tile, Value query,
                                      Value key, Value value, Value grad,
                                      Value logsumexp, Value delta,
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
  AttentionGradLowering(MLIRContext *ctx, int64_t tileBytes,
                        bool transposedOperands, int64_t taskBytes)
      : OpConversionPattern(ctx), tileBytes(tileBytes),
        transposedOperands(transposedOperands), taskBytes(taskBytes) {}
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
    int64_t bh = l.B * l.Hkv, tile = l.tilePositions(tileBytes);
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
    if (taskBytes > 0) {
      rewriter.replaceOp(
          op, attentionGradTasks(
                  rewriter, loc, l, mask, score,
                  l.taskTilePositions(taskBytes), adaptor.getQuery(),
                  adaptor.getKey(), adaptor.getValue(), adaptor.getGrad(),
                  adaptor.getLogsumexp(), deltaBySequence, transposedOperands));
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
    SmallVector<Value> grads = gradQueryTiles(
        rewriter, loc, l, mask, score, tile, whole, init, transposedOperands);
    rewriter.replaceOp(op, {l.fromQueryRows(rewriter, loc, grads[0]),
                            l.fromKeyRows(rewriter, loc, grads[1]),
                            l.fromKeyRows(rewriter, loc, grads[2])});
    return success();
  }

  int64_t tileBytes;
  bool transposedOperands;
  int64_t taskBytes;
};

} // namespace

void mlir::tg::populateTGAttentionToLinalgPatterns(RewritePatternSet &patterns,
                                                   int64_t tileBytes,
                                                   bool transposedOperands,
                                                   int64_t taskBytes) {
  patterns.add<AttentionLowering>(patterns.getContext(), tileBytes, taskBytes);
  patterns.add<AttentionGradLowering>(patterns.getContext(), tileBytes,
                                      transposedOperands, taskBytes);
}
