//===- TypeInference.cpp - shape rules of tg ops --------------------------===//
//
// One place for every shape rule, so that verifiers, result type inference
// and builders agree. Messages name the operand and the sizes involved.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TypeInference.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::tg;

namespace {
template <typename... Args>
LogicalResult fail(ErrorEmitter emitError, Args &&...args) {
  if (emitError) {
    InFlightDiagnostic diag = emitError();
    (diag << ... << std::forward<Args>(args));
  }
  return failure();
}

/// Prints a shape as `[2, 8, 64]` in diagnostics.
std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

} // namespace

std::optional<int64_t> mlir::tg::checkedNumElements(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    if (size < 0 || llvm::MulOverflow(count, size, count))
      return std::nullopt;
  return count;
}

LogicalResult mlir::tg::checkElementCount(Type type, ErrorEmitter emitError) {
  auto shaped = llvm::dyn_cast_if_present<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return success();
  std::optional<int64_t> count = checkedNumElements(shaped.getShape());
  if (!count)
    return fail(emitError, type, " has 2^63 or more elements");
  Type element = shaped.getElementType();
  int64_t bytes = 0,
          elementBytes = element.isIntOrFloat()
                             ? std::max<int64_t>(
                                   1, (element.getIntOrFloatBitWidth() + 7) / 8)
                             : 8;
  if (llvm::MulOverflow(*count, elementBytes, bytes))
    return fail(emitError, type, " has 2^63 or more bytes (", *count,
                " elements of ", elementBytes, " bytes)");
  return success();
}

namespace {

LogicalResult checkSameElementType(RankedTensorType a, StringRef aName,
                                   RankedTensorType b, StringRef bName,
                                   ErrorEmitter emitError) {
  if (a.getElementType() == b.getElementType())
    return success();
  return fail(emitError, aName, " and ", bName,
              " must have the same element type, got ", a.getElementType(),
              " and ", b.getElementType());
}
} // namespace

std::optional<SmallVector<int64_t>>
mlir::tg::broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t r = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    if (l != r && l != 1 && r != 1)
      return std::nullopt;
    result[rank - 1 - i] = l == 1 ? r : l;
  }
  return result;
}

bool mlir::tg::isBroadcastableTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[from.size() - 1 - i];
    if (f != 1 && f != to[to.size() - 1 - i])
      return false;
  }
  return true;
}

FailureOr<RankedTensorType>
mlir::tg::inferBroadcastBinary(RankedTensorType lhs, RankedTensorType rhs,
                               ErrorEmitter emitError) {
  if (failed(checkSameElementType(lhs, "lhs", rhs, "rhs", emitError)))
    return failure();
  auto shape = broadcastShapes(lhs.getShape(), rhs.getShape());
  if (!shape)
    return fail(emitError, "operand shapes ", shapeStr(lhs.getShape()), " and ",
                shapeStr(rhs.getShape()), " are not broadcast-compatible");
  return RankedTensorType::get(*shape, lhs.getElementType());
}

FailureOr<RankedTensorType>
mlir::tg::inferTranspose(RankedTensorType input, ArrayRef<int64_t> permutation,
                         ErrorEmitter emitError) {
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(permutation.size()) != rank)
    return fail(emitError, "permutation has ", permutation.size(),
                " entries but the input has rank ", rank);
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> shape;
  for (int64_t p : permutation) {
    if (p < 0 || p >= rank || seen[p])
      return fail(emitError, "permutation ", shapeStr(permutation),
                  " is not a permutation of [0, ", rank, ")");
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
  return RankedTensorType::get(shape, input.getElementType());
}

FailureOr<RankedTensorType> mlir::tg::inferReduceSum(RankedTensorType input,
                                                     ArrayRef<int64_t> dims,
                                                     bool keepDims,
                                                     ErrorEmitter emitError) {
  int64_t rank = input.getRank();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank)
      return fail(emitError, "reduction dimension ", dims[i],
                  " is out of range for rank ", rank);
    if (i > 0 && dims[i] <= dims[i - 1])
      return fail(emitError, "reduction dimensions ", shapeStr(dims),
                  " must be sorted and unique");
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(dims, d);
    if (!reduced)
      shape.push_back(input.getDimSize(d));
    else if (keepDims)
      shape.push_back(1);
  }
  return RankedTensorType::get(shape, input.getElementType());
}

FailureOr<RankedTensorType> mlir::tg::inferSlice(RankedTensorType input,
                                                 int64_t axis, int64_t start,
                                                 int64_t size,
                                                 ErrorEmitter emitError) {
  int64_t rank = input.getRank();
  if (axis < 0 || axis >= rank)
    return fail(emitError, "axis ", axis, " is out of range for rank ", rank);
  int64_t dim = input.getDimSize(axis);
  if (start < 0 || size <= 0 || start + size > dim)
    return fail(emitError, "slice [", start, ", ", start + size,
                ") is out of bounds for dimension ", axis, " of size ", dim);
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = size;
  return RankedTensorType::get(shape, input.getElementType());
}

FailureOr<RankedTensorType> mlir::tg::inferMatmul(RankedTensorType lhs,
                                                  RankedTensorType rhs,
                                                  bool transposeLhs,
                                                  bool transposeRhs,
                                                  ErrorEmitter emitError) {
  if (failed(checkSameElementType(lhs, "lhs", rhs, "rhs", emitError)))
    return failure();
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return fail(emitError, "operands must have rank >= 2, got lhs rank ",
                lhs.getRank(), " and rhs rank ", rhs.getRank());
  ArrayRef<int64_t> l = lhs.getShape(), r = rhs.getShape();
  int64_t lr = l.size(), rr = r.size();
  int64_t m = transposeLhs ? l[lr - 1] : l[lr - 2];
  int64_t kl = transposeLhs ? l[lr - 2] : l[lr - 1];
  int64_t kr = transposeRhs ? r[rr - 1] : r[rr - 2];
  int64_t n = transposeRhs ? r[rr - 2] : r[rr - 1];
  if (kl != kr)
    return fail(emitError, "contraction sizes differ: lhs K = ", kl,
                ", rhs K = ", kr);
  ArrayRef<int64_t> lb = l.drop_back(2), rb = r.drop_back(2);
  if (!lb.empty() && !rb.empty() && lb != rb)
    return fail(emitError, "batch dimensions ", shapeStr(lb), " and ",
                shapeStr(rb), " differ");
  SmallVector<int64_t> shape(lb.empty() ? rb : lb);
  shape.push_back(m);
  shape.push_back(n);
  return RankedTensorType::get(shape, lhs.getElementType());
}

FailureOr<RankedTensorType> mlir::tg::inferLinear(RankedTensorType input,
                                                  RankedTensorType weight,
                                                  RankedTensorType bias,
                                                  ErrorEmitter emitError) {
  if (failed(checkSameElementType(input, "input", weight, "weight", emitError)))
    return failure();
  if (input.getRank() < 1)
    return fail(emitError, "input must have rank >= 1");
  if (weight.getRank() != 2)
    return fail(emitError, "weight must be [out, in], got rank ",
                weight.getRank());
  int64_t in = input.getShape().back();
  if (weight.getDimSize(1) != in)
    return fail(emitError, "weight is ", shapeStr(weight.getShape()),
                " but the input's last dimension is ", in,
                " (weight layout is [out, in])");
  int64_t out = weight.getDimSize(0);
  if (bias) {
    if (failed(checkSameElementType(input, "input", bias, "bias", emitError)))
      return failure();
    if (bias.getRank() != 1 || bias.getDimSize(0) != out)
      return fail(emitError, "bias must be [", out, "], got ",
                  shapeStr(bias.getShape()));
  }
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = out;
  return RankedTensorType::get(shape, input.getElementType());
}

FailureOr<RankedTensorType> mlir::tg::inferEmbedding(RankedTensorType table,
                                                     RankedTensorType indices,
                                                     ErrorEmitter emitError) {
  if (table.getRank() != 2)
    return fail(emitError, "table must be [vocab, dim], got rank ",
                table.getRank());
  SmallVector<int64_t> shape(indices.getShape());
  shape.push_back(table.getDimSize(1));
  return RankedTensorType::get(shape, table.getElementType());
}

FailureOr<RankedTensorType> mlir::tg::inferNorm(RankedTensorType input,
                                                RankedTensorType weight,
                                                RankedTensorType bias,
                                                ErrorEmitter emitError) {
  if (input.getRank() < 1)
    return fail(emitError, "input must have rank >= 1");
  int64_t d = input.getShape().back();
  for (auto [t, name] :
       {std::pair(weight, "weight"), std::pair(bias, "bias")}) {
    if (!t)
      continue;
    if (failed(checkSameElementType(input, "input", t, name, emitError)))
      return failure();
    if (t.getRank() != 1 || t.getDimSize(0) != d)
      return fail(emitError, name, " must be [", d,
                  "] (the input's last dimension), got ",
                  shapeStr(t.getShape()));
  }
  return input;
}

RankedTensorType mlir::tg::attentionLogSumExpType(RankedTensorType query) {
  ArrayRef<int64_t> q = query.getShape();
  return RankedTensorType::get({q[0], q[1], q[2]}, query.getElementType());
}

FailureOr<RankedTensorType> mlir::tg::inferAttention(RankedTensorType query,
                                                     RankedTensorType key,
                                                     RankedTensorType value,
                                                     bool causal,
                                                     ErrorEmitter emitError,
                                                     bool positioned) {
  for (auto [t, name] : {std::pair(query, "query"), std::pair(key, "key"),
                         std::pair(value, "value")}) {
    if (t.getRank() != 4)
      return fail(emitError, name, " must be [B, S, H, D], got rank ",
                  t.getRank());
  }
  if (failed(checkSameElementType(query, "query", key, "key", emitError)) ||
      failed(checkSameElementType(query, "query", value, "value", emitError)))
    return failure();
  ArrayRef<int64_t> q = query.getShape(), k = key.getShape(),
                    v = value.getShape();
  if (q[0] != k[0] || q[0] != v[0])
    return fail(emitError, "batch sizes differ: query ", q[0], ", key ", k[0],
                ", value ", v[0]);
  if (k[1] != v[1] || k[2] != v[2])
    return fail(emitError, "key ", shapeStr(k), " and value ", shapeStr(v),
                " must agree on sequence length and heads");
  if (q[3] != k[3])
    return fail(emitError, "query head dim ", q[3],
                " differs from key head dim ", k[3]);
  if (q[2] % k[2] != 0)
    return fail(emitError, "key/value heads (", k[2],
                ") must divide query heads (", q[2], ")");
  if (positioned && q[1] > k[1])
    return fail(emitError, "attention at positions reads a cache of ", k[1],
                " keys: it takes at most that many queries, got ", q[1]);
  if (causal && !positioned && q[1] != k[1])
    return fail(emitError,
                "causal attention needs equal query and key "
                "lengths, got ",
                q[1], " and ", k[1]);
  return RankedTensorType::get({q[0], q[1], q[2], v[3]},
                               query.getElementType());
}

FailureOr<RankedTensorType>
mlir::tg::inferCrossEntropy(RankedTensorType logits, RankedTensorType targets,
                            ErrorEmitter emitError) {
  if (logits.getRank() < 1)
    return fail(emitError, "logits must have rank >= 1");
  if (logits.getShape().drop_back() != targets.getShape())
    return fail(emitError, "targets ", shapeStr(targets.getShape()),
                " must match the logits' leading dimensions ",
                shapeStr(logits.getShape().drop_back()));
  return RankedTensorType::get({}, logits.getElementType());
}
