//===- AttentionTiles.h - FlashAttention tiles of tg.attention -*- C++ -*-===//
//
// What the forward (Attention.cpp) and the backward (AttentionGrad.cpp)
// lowering of tg.attention share: the layout of grouped queries as rows,
// the masks and score map of one key tile, the walk over the key tiles a
// query tile sees, and the products and slices of the tiles.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_LIB_CONVERSION_TGTOLINALG_ATTENTIONTILES_H
#define TGC_LIB_CONVERSION_TGTOLINALG_ATTENTIONTILES_H

#include "Utils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace mlir::tg::lowering::attention {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm);

/// out[n] = a[n] · b[n] for every batch entry n, accumulated into `init`: a
/// named linalg.batch_matmul on row-contiguous operands.
Value batchMatmulInto(OpBuilder &b, Location loc, Value lhs, Value rhs,
                      Value init);

Value batchMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs);

/// Swaps the two matrix dimensions of [N, R, C].
Value transposeMatrices(OpBuilder &b, Location loc, Value v);

/// `offset` · `factor` as an index.
OpFoldResult scaled(OpBuilder &b, Location loc, OpFoldResult offset,
                    int64_t factor);

/// `dest` with the elements of each row updated in place by `body(row
/// values..., element)`: a generic writing into `dest` itself, so that the
/// update bufferizes without a copy. `rows` are [N, R] tensors read per row
/// of the [N, R, C] (or [N, R]) `dest`.
Value updateRows(OpBuilder &b, Location loc, Value dest, ValueRange rows,
                 BodyFn body);

/// `acc` + the row sums of [N, R, C] `x`, reduced into `acc` ([N, R]).
Value addRowSums(OpBuilder &b, Location loc, Value x, Value acc);

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

/// How the target tiles one attention op (its tg.tiling, a
/// #tg.attention_tiling), in positions; without one, the whole sequence
/// is one tile and there are no tasks.
struct Tiling {
  /// Query and key positions per batched tile (at most the sequence).
  int64_t tile;
  /// Positions per tile of a parallel task; 0: no tasks.
  int64_t taskTile;
  /// The gradient's products read score tiles through transposed maps.
  bool transposedOperands;
};
Tiling tilingOf(Operation *op, const Layout &l);

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

template <typename OpTy> Scoring scoringOf(OpTy op) {
  return {op.getScaleOrDefault(), softcapOf(op)};
}

/// The window of tg.attention or tg.attention_grad, if any.
template <typename OpTy> std::optional<int64_t> windowOf(OpTy op) {
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
                             int64_t back);

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
                                  ValueRange state, KeyTileBody body);

/// The scores (scale · Q·Kᵀ, soft-capped where `score` says) for a query
/// tile's rows `qTile` ([N, R, D]) and a key tile's `kTTile` ([N, D, keys]),
/// −inf where `mask` hides a key: local row r is query position r / G of
/// the tile, local key c key position c of the key tile.
Value scores(OpBuilder &b, Location loc, const Layout &l, Value qTile,
             Value kTTile, const Scoring &score, const TileMask &mask);

/// A slice of `source` at `offsets` x `sizes` (unit strides), with the
/// dimensions `dropped` (of size 1) left out of its type.
Value sliceOf(OpBuilder &b, Location loc, Value source,
              ArrayRef<OpFoldResult> offsets, ArrayRef<int64_t> sizes,
              ArrayRef<int64_t> dropped);

/// `v` regrouped: its dimensions collapsed by `collapse`, then expanded by
/// `expand` into `type`. Reshapes through a matrix rather than through one
/// flat dimension, which the targets' views keep as strided views.
Value regroup(OpBuilder &b, Location loc, Value v,
              ArrayRef<ReassociationIndices> collapse,
              ArrayRef<ReassociationIndices> expand, RankedTensorType type);

/// A contiguous copy of `v` (a strided slice) in a new tensor of its shape.
Value contiguousCopy(OpBuilder &b, Location loc, Value v);

/// A task's matrix [R, C] as a batch of one [1, R, C] (an expand: never a
/// reshape through one flat dimension, which cannot view a strided slice
/// and would copy it on any target).
Value matrixAsBatch(OpBuilder &b, Location loc, Value v);

/// Query-shaped [B, S, Hq, E] with the heads split into groups:
/// [B, S, Hkv, G, E].
Value byGroup(OpBuilder &b, Location loc, const Layout &l, Value x, int64_t e);

/// tg.attention at `positions` ([B, S] i32) against a KV cache: the output
/// and logsumexp, every query scoring the whole cache (CachedAttention.cpp).
std::pair<Value, Value> cachedAttention(OpBuilder &b, Location loc,
                                        const Layout &l, const Mask &mask,
                                        const Scoring &score, Value query,
                                        Value key, Value value,
                                        Value positions);

/// Adds tg.attention_grad's lowering (AttentionGrad.cpp).
void populateAttentionGradPattern(RewritePatternSet &patterns);

} // namespace mlir::tg::lowering::attention

#endif // TGC_LIB_CONVERSION_TGTOLINALG_ATTENTIONTILES_H
