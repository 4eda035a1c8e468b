//===- TypeInference.h - shape rules of tg ops ------------------*- C++ -*-===//
//
// Shape rules shared by the verifiers and result type inference of tg ops
// (and by passes that build tg IR). Each returns the result type, or emits a
// diagnostic through `emitError` (when given) and returns failure.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DIALECT_TG_IR_TYPEINFERENCE_H
#define TGC_DIALECT_TG_IR_TYPEINFERENCE_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"

#include <optional>

namespace mlir::tg {

/// Emits an error for op `opName` at `loc` (if any); always returns failure.
using ErrorEmitter = function_ref<InFlightDiagnostic()>;

/// Number of elements of a static shape, or nullopt when the product does not
/// fit in int64 (2^63 elements or more).
std::optional<int64_t> checkedNumElements(ArrayRef<int64_t> shape);

/// Checks that a statically shaped `type` has fewer than 2^63 elements and
/// bytes, so sizes computed from it cannot overflow; anything else passes.
/// The message (emitted through `emitError`, when given) names the type.
LogicalResult checkElementCount(Type type, ErrorEmitter emitError);

/// NumPy broadcast of two shapes; nullopt when they are incompatible.
std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> lhs,
                                                    ArrayRef<int64_t> rhs);

/// True when `from` broadcasts to `to` under NumPy rules.
bool isBroadcastableTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to);

FailureOr<RankedTensorType> inferBroadcastBinary(RankedTensorType lhs,
                                                 RankedTensorType rhs,
                                                 ErrorEmitter emitError);
FailureOr<RankedTensorType> inferTranspose(RankedTensorType input,
                                           ArrayRef<int64_t> permutation,
                                           ErrorEmitter emitError);
FailureOr<RankedTensorType> inferReduceSum(RankedTensorType input,
                                           ArrayRef<int64_t> dims,
                                           bool keepDims,
                                           ErrorEmitter emitError);
FailureOr<RankedTensorType> inferSlice(RankedTensorType input, int64_t axis,
                                       int64_t start, int64_t size,
                                       ErrorEmitter emitError);
FailureOr<RankedTensorType> inferMatmul(RankedTensorType lhs,
                                        RankedTensorType rhs, bool transposeLhs,
                                        bool transposeRhs,
                                        ErrorEmitter emitError);
FailureOr<RankedTensorType> inferLinear(RankedTensorType input,
                                        RankedTensorType weight,
                                        RankedTensorType bias,
                                        ErrorEmitter emitError);
FailureOr<RankedTensorType> inferEmbedding(RankedTensorType table,
                                           RankedTensorType indices,
                                           ErrorEmitter emitError);
FailureOr<RankedTensorType> inferNorm(RankedTensorType input,
                                      RankedTensorType weight,
                                      RankedTensorType bias,
                                      ErrorEmitter emitError);
/// The per-row logsumexp of attention over `query` ([B, S, Hq, D]):
/// [B, S, Hq] of its element type.
RankedTensorType attentionLogSumExpType(RankedTensorType query);

FailureOr<RankedTensorType> inferAttention(RankedTensorType query,
                                           RankedTensorType key,
                                           RankedTensorType value, bool causal,
                                           ErrorEmitter emitError,
                                           bool positioned = false);
FailureOr<RankedTensorType> inferCrossEntropy(RankedTensorType logits,
                                              RankedTensorType targets,
                                              ErrorEmitter emitError);

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_IR_TYPEINFERENCE_H
