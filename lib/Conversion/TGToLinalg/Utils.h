//===- Utils.h - helpers shared by the tg → linalg patterns -----*- C++ -*-===//
#ifndef TGC_LIB_CONVERSION_TGTOLINALG_UTILS_H
#define TGC_LIB_CONVERSION_TGTOLINALG_UTILS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

#include <functional>
#include <optional>

namespace mlir::tg::lowering {

using BodyFn = std::function<Value(OpBuilder &, Location, ValueRange)>;

RankedTensorType tensorType(Value v);

/// A scalar constant of a float type.
Value constantFloat(OpBuilder &b, Location loc, Type type, double value);

/// tensor.empty + linalg.fill.
Value filled(OpBuilder &b, Location loc, RankedTensorType type, double value);

/// A linalg.generic with one output: `inputs` read through `inputMaps`, the
/// output (initialised with `init`) through `outputMap`; `body` gets the
/// input elements and the output element and returns the new output element.
Value generic(OpBuilder &b, Location loc, ValueRange inputs,
              ArrayRef<AffineMap> inputMaps, Value init, AffineMap outputMap,
              ArrayRef<utils::IteratorType> iterators, BodyFn body);

/// Elementwise generic over `resultType`, each input broadcast to it under
/// NumPy rules (size-1 and missing dimensions are dropped first, so every
/// indexing map is a projected permutation).
Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                  ValueRange inputs, BodyFn body);

using MultiBodyFn =
    std::function<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// One elementwise generic with several results of the same shape (element
/// types may differ): a single pass over memory where separate loops would
/// read the shared inputs once each. `body` gets the input elements and
/// returns one element per result.
SmallVector<Value> elementwiseResults(OpBuilder &b, Location loc,
                                      ArrayRef<RankedTensorType> resultTypes,
                                      ValueRange inputs, MultiBodyFn body);

/// Reshape for static shapes: one collapse or expand where one does it,
/// else through the finest shape both coarsen, else through 1-D.
Value reshape(OpBuilder &b, Location loc, Value v, RankedTensorType target);

/// Reads `input` broadcast to a loop nest of `loopRank` whose trailing
/// dimensions align with it: returns the operand (with broadcast size-1
/// dimensions dropped) and its map.
std::pair<Value, AffineMap> broadcastOperand(OpBuilder &b, Location loc,
                                             Value input,
                                             ArrayRef<int64_t> loopShape);

/// Iterator list: all parallel, with `reduction` at the given positions.
SmallVector<utils::IteratorType> iterators(int64_t rank,
                                           ArrayRef<int64_t> reductions = {});

/// Map from a loop nest of `rank` to the listed dimensions.
AffineMap dimsMap(MLIRContext *ctx, int64_t rank, ArrayRef<int64_t> dims);

SmallVector<int64_t> allDimsBut(int64_t rank, int64_t skip);

/// Reduces same-shaped `inputs` over `axis`: `combine` gets their elements
/// and the accumulator and returns the new accumulator.
Value reduceAxis(OpBuilder &b, Location loc, ValueRange inputs, int64_t axis,
                 double initValue, BodyFn combine);

/// Operands and indexing maps for a loop nest of `rank`: `full` inputs read
/// with the identity map, `rows` with `axis` dropped, `columns` along `axis`.
void collectOperands(MLIRContext *ctx, int64_t rank, int64_t axis,
                     ValueRange full, ValueRange rows, ValueRange columns,
                     SmallVectorImpl<Value> &inputs,
                     SmallVectorImpl<AffineMap> &maps);

/// Elementwise over `type`: `full` inputs have its shape, `rows` have `axis`
/// dropped, `columns` are 1-D along `axis`. `body` gets them in that order.
Value rowwise(OpBuilder &b, Location loc, RankedTensorType type, int64_t axis,
              ValueRange full, ValueRange rows, ValueRange columns,
              BodyFn body);

/// A combine function accumulating `term(elements)` into the accumulator.
BodyFn sumOf(BodyFn term);
/// The first element (an identity body).
Value first(OpBuilder &, Location, ValueRange a);

/// Numerically stable softmax of `x` along `axis`.
Value softmax(OpBuilder &b, Location loc, Value x, int64_t axis);

/// A float constant of the same type as `like`.
Value cst(OpBuilder &b, Location loc, Value like, double value);

/// An index for integer `id` clamped to [0, size) (ids and targets out of
/// range are clamped, as the ops document).
Value clampIndex(OpBuilder &b, Location loc, Value id, int64_t size);

/// Converts a float scalar to `type` (extension or truncation).
Value castFloat(OpBuilder &b, Location loc, Value v, Type type);

/// Products of bf16/f16 operands accumulate in f32 whatever their result
/// type (mixed precision: tg.matmul's description); others in their own.
Type accumulationType(Type operand);

/// The tensor `v` with its elements converted to `elt` (itself when they
/// are of it already).
Value castElements(OpBuilder &b, Location loc, Value v, Type elt);

/// x * y, x + y, ... on scalars of the same float type.
Value mulF(OpBuilder &b, Location loc, Value x, Value y);
Value addF(OpBuilder &b, Location loc, Value x, Value y);
Value subF(OpBuilder &b, Location loc, Value x, Value y);
Value divF(OpBuilder &b, Location loc, Value x, Value y);

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// A materialised transpose of a matrix: O(M·N) copies buy a contiguous
/// operand for an O(M·N·K) product.
Value transpose2D(OpBuilder &b, Location loc, Value v);

/// [M, N] = a[M, K] · b[K, N] accumulated into `init`: a named linalg.matmul,
/// the targets' matmul schedules recognise (any M, N, K).
Value matmul2D(OpBuilder &b, Location loc, Value lhs, Value rhs, Value init);

/// out[n] += a[n]ᵀ · b[n] (a: [N, K, M], b: [N, K, N']), accumulated into
/// `init`: a batch matmul reading A through a transposed map, so no
/// transposed copy of it is made (attention's P and dS tiles).
Value batchMatmulTransposedLhs(OpBuilder &b, Location loc, Value lhs, Value rhs,
                               Value init);

/// [M, N] = aᵀ · b with `a` stored [K, M] (weight gradients dW = dyᵀ·x),
/// accumulated into `init`: a matmul reading A through a transposed map.
Value matmulTransposedLhs(OpBuilder &b, Location loc, Value lhs, Value rhs,
                          Value init);

//===----------------------------------------------------------------------===//
// Chunks
//===----------------------------------------------------------------------===//

/// Entries [offset, offset + size) of dimension `dim` of `t`.
Value sliceDim(OpBuilder &b, Location loc, int64_t dim, Value t,
               OpFoldResult offset, int64_t size);

/// Writes `part` into entries [offset, offset + size) of dimension `dim` of
/// `dest`.
Value insertDim(OpBuilder &b, Location loc, int64_t dim, Value part, Value dest,
                OpFoldResult offset);

/// Runs `body(offset, size, values) -> new values` over chunks of `chunk`
/// of `total` entries: an scf.for over the full chunks (straight-line code
/// for a single one), then the remainder with its own static size. Every
/// chunk has a static shape.
using ChunkBody = function_ref<SmallVector<Value>(
    OpBuilder &, Location, OpFoldResult, int64_t, ValueRange)>;
SmallVector<Value> forEachChunk(OpBuilder &b, Location loc, int64_t total,
                                int64_t chunk, ValueRange init, ChunkBody body);

/// The full chunks of [begin, end) (a multiple of `chunk` apart, each
/// bound static or not): an scf.for, straight-line code for a single
/// static chunk, nothing when the bounds are known to meet.
SmallVector<Value> forEachFullChunkIn(OpBuilder &b, Location loc,
                                      OpFoldResult begin, OpFoldResult end,
                                      int64_t chunk, ValueRange init,
                                      ChunkBody body);

/// The full chunks of [0, end) alone: forEachFullChunkIn from 0.
SmallVector<Value> forEachFullChunk(OpBuilder &b, Location loc,
                                    OpFoldResult end, int64_t chunk,
                                    ValueRange init, ChunkBody body);

/// Entries [offset, offset + size) of dimension `dim` of `dest`, computed by
/// `compute` from their zero-filled slice and written back: an
/// extract/insert pair that bufferizes in place, without a copy.
Value computeIntoSlice(OpBuilder &b, Location loc, int64_t dim, Value dest,
                       OpFoldResult offset, int64_t size,
                       function_ref<Value(Value zeroed)> compute);

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

/// Logits as [R, V] and targets as [R], with per-row max and Σexp(x − max).
struct LossRows {
  Value logits, targets, max, sumExp;
};

/// i1: whether `target` (a scalar) is the ignore index.
Value isIgnored(OpBuilder &b, Location l, Value target,
                std::optional<int64_t> ignore);

LossRows lossRows(OpBuilder &b, Location loc, Value logits, Value targets,
                  std::optional<int64_t> ignore);

/// 0-d count of the targets [R] that are not `ignore`, in `elementType`.
Value targetCount(OpBuilder &b, Location loc, Value targets,
                  std::optional<int64_t> ignore, Type elementType);

/// 0-d Σ over the rows not ignored of log Σexp + max − logit[target].
Value lossSum(OpBuilder &b, Location loc, const LossRows &r,
              std::optional<int64_t> ignore);

/// One element of the loss's logits gradient inside a 2-D generic whose
/// loop `classDim` runs over the V classes ([rows, V]: 1; [V, rows]: 0):
/// `grad` · (`p` − onehot(`target`)) / `count`, zero when `target` is
/// ignored (`grad` null: 1).
Value lossGradElement(OpBuilder &b, Location l, Value p, Value target,
                      int64_t vocab, Value grad, Value count,
                      std::optional<int64_t> ignore, unsigned classDim = 1);

/// [R, V] gradient of the mean loss: grad · (softmax − onehot) / count,
/// zero on ignored rows (`grad` and `count` 0-d); with a `softcap` (the
/// rows' logits being capped ones) also times the cap's slope.
Value logitsGrad(OpBuilder &b, Location loc, const LossRows &r, Value grad,
                 Value count, std::optional<int64_t> ignore,
                 std::optional<double> softcap = std::nullopt);

/// A soft cap of scalar `x`: cap · tanh(x / cap) (attention scores, logits).
Value softcapped(OpBuilder &b, Location l, Value x, double cap);

/// The soft cap's slope at the capped value z: max(1 − (z / cap)², 0), 0
/// also where a mask made z −inf.
Value softcapSlope(OpBuilder &b, Location l, Value capped, double cap);

/// `x` with each element soft-capped (a new tensor), or `x` without a cap.
Value softcappedTensor(OpBuilder &b, Location loc, Value x,
                       std::optional<double> cap);

} // namespace mlir::tg::lowering

#endif // TGC_LIB_CONVERSION_TGTOLINALG_UTILS_H
