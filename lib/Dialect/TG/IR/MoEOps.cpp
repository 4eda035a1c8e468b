//===- MoEOps.cpp - verifiers and costs of the mixture-of-experts ops -----===//
//
// tg.route, tg.route_grad, tg.expert_dispatch, tg.expert_counts,
// tg.grouped_matmul and tg.grouped_weight_grad (docs/moe.md). Their
// gradient rules are with the others in GradientRules.cpp.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

bool isLowPrecision(Type t) { return llvm::isa<BFloat16Type, Float16Type>(t); }

/// A product's result element type: the operands', or f32 for bf16/f16
/// operands.
bool isProductResultType(Type operand, Type result) {
  return result == operand || (isLowPrecision(operand) && result.isF32());
}

/// `offsets` must be `[E + 1]` for `experts` groups.
LogicalResult verifyOffsets(Operation *op, RankedTensorType offsets,
                            int64_t experts) {
  if (offsets.getRank() != 1 || offsets.getDimSize(0) != experts + 1)
    return op->emitOpError("offsets must be [")
           << experts + 1 << "] (one more than the " << experts
           << " experts), got " << offsets;
  return success();
}

} // namespace

LogicalResult RouteOp::verify() {
  RankedTensorType logits = getLogits().getType();
  if (logits.getRank() < 1)
    return emitOpError("logits must have rank >= 1 ([..., experts])");
  int64_t experts = logits.getShape().back(), k = getTopK();
  if (k > experts)
    return emitOpError("top_k ")
           << k << " is more than the " << experts << " experts";
  SmallVector<int64_t> shape(logits.getShape());
  shape.back() = k;
  // Probabilities in f32 as Hugging Face computes them; f64 models (the
  // numerics tests) keep f64.
  Type wt = logits.getElementType().isF64()
                ? Type(Float64Type::get(getContext()))
                : Type(Float32Type::get(getContext()));
  auto weights = RankedTensorType::get(shape, wt);
  if (getWeights().getType() != weights)
    return emitOpError("weights must be ")
           << weights << ", got " << getWeights().getType();
  if (getExperts().getType().getShape() != ArrayRef<int64_t>(shape))
    return emitOpError("experts must have the shape of weights, got ")
           << getExperts().getType();
  return success();
}

LogicalResult RouteGradOp::verify() {
  RankedTensorType logits = getLogits().getType(), grad = getGrad().getType();
  if (getType() != logits)
    return emitOpError("result must have the logits' type ")
           << logits << ", got " << getType();
  if (logits.getRank() < 1 || grad.getRank() != logits.getRank() ||
      grad.getShape().drop_back() != logits.getShape().drop_back() ||
      grad.getDimSize(grad.getRank() - 1) > logits.getShape().back())
    return emitOpError("grad ")
           << grad << " must be the routing weights of logits " << logits;
  if (grad.getElementType() !=
      (logits.getElementType().isF64() ? Type(Float64Type::get(getContext()))
                                       : Type(Float32Type::get(getContext()))))
    return emitOpError("grad must be f32 (f64 for f64 logits), got ") << grad;
  if (getExperts().getType().getShape() != grad.getShape())
    return emitOpError("experts must have the shape of grad, got ")
           << getExperts().getType();
  return success();
}

LogicalResult ExpertDispatchOp::verify() {
  RankedTensorType experts = getExperts().getType();
  if (experts.getRank() != 2)
    return emitOpError("experts must be [tokens, top_k], got ") << experts;
  int64_t n = experts.getNumElements();
  if (getRows().getType().getShape() != ArrayRef<int64_t>{n})
    return emitOpError("rows must be [") << n << "], got "
                                         << getRows().getType();
  if (getPositions().getType() != experts)
    return emitOpError("positions must be ")
           << experts << ", got " << getPositions().getType();
  return verifyOffsets(*this, getOffsets().getType(), getNumExperts());
}

LogicalResult ExpertCountsOp::verify() {
  RankedTensorType out = getType();
  if (out.getRank() != 1 ||
      out.getDimSize(0) != static_cast<int64_t>(getNumExperts()))
    return emitOpError("result must be [")
           << getNumExperts() << "] (one count per expert), got " << out;
  return success();
}

LogicalResult GroupedMatmulOp::verify() {
  RankedTensorType input = getInput().getType(), out = getType();
  if (getWeights().empty())
    return emitOpError("needs at least one weight");
  if (input.getRank() != 2)
    return emitOpError("input must be [rows, K], got ") << input;
  if (failed(verifyOffsets(*this, getOffsets().getType(),
                           getWeights().size())))
    return failure();
  auto first = llvm::cast<RankedTensorType>(getWeights().front().getType());
  for (Value w : getWeights())
    if (w.getType() != first)
      return emitOpError("every weight must be ")
             << first << ", got " << w.getType();
  if (first.getRank() != 2 || first.getElementType() != input.getElementType())
    return emitOpError("weights must be matrices of the input's element "
                       "type, got ")
           << first;
  int64_t k = input.getDimSize(1);
  bool t = getTransposeWeights();
  if (first.getDimSize(t ? 1 : 0) != k)
    return emitOpError("weights ")
           << first << " do not take rows of " << k << " columns"
           << (t ? " (transposed: [M, K])" : " ([K, M])");
  int64_t m = first.getDimSize(t ? 0 : 1);
  if (out.getShape() != ArrayRef<int64_t>{input.getDimSize(0), m} ||
      !isProductResultType(input.getElementType(), out.getElementType()))
    return emitOpError("result must be [")
           << input.getDimSize(0) << ", " << m << "] of the operands' type "
           << "(or f32 for bf16/f16), got " << out;
  return success();
}

LogicalResult GroupedWeightGradOp::verify() {
  RankedTensorType lhs = getLhs().getType(), rhs = getRhs().getType();
  if (lhs.getRank() != 2 || rhs.getRank() != 2 ||
      lhs.getDimSize(0) != rhs.getDimSize(0) ||
      lhs.getElementType() != rhs.getElementType())
    return emitOpError("lhs and rhs must be matrices with the same rows and "
                       "element type, got ")
           << lhs << " and " << rhs;
  if (getResults().empty())
    return emitOpError("needs at least one result");
  if (failed(verifyOffsets(*this, getOffsets().getType(),
                           getResults().size())))
    return failure();
  for (Value r : getResults()) {
    auto type = llvm::cast<RankedTensorType>(r.getType());
    if (type.getShape() !=
            ArrayRef<int64_t>{lhs.getDimSize(1), rhs.getDimSize(1)} ||
        !isProductResultType(lhs.getElementType(), type.getElementType()))
      return emitOpError("each result must be [")
             << lhs.getDimSize(1) << ", " << rhs.getDimSize(1)
             << "] of the operands' type (or f32 for bf16/f16), got " << type;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

// Routing is per logit: the softmax (5 FLOPs, as tg.softmax), a comparison
// per logit for each of the k choices, and the renormalisation.
OpCost RouteOp::getCost() {
  int64_t logits = getLogits().getType().getNumElements();
  int64_t chosen = getWeights().getType().getNumElements();
  int64_t k = getTopK();
  return {0, (5 + k) * logits + (getNormalize() ? 2 : 0) * chosen};
}

OpCost RouteGradOp::getCost() {
  int64_t logits = getLogits().getType().getNumElements();
  int64_t chosen = getGrad().getType().getNumElements();
  // The softmax again, its gradient, and the renormalisation's.
  return {0, 9 * logits + (getNormalize() ? 4 : 0) * chosen};
}

OpCost ExpertDispatchOp::getCost() { return {}; }
OpCost ExpertCountsOp::getCost() { return {}; }

// Every row belongs to one expert at most: a dense product's work over the
// rows, whatever the routing.
OpCost GroupedMatmulOp::getCost() {
  RankedTensorType input = getInput().getType();
  int64_t m = getType().getDimSize(1);
  int64_t mults = input.getNumElements() * m;
  return {mults, 2 * mults};
}

OpCost GroupedWeightGradOp::getCost() {
  RankedTensorType lhs = getLhs().getType(), rhs = getRhs().getType();
  int64_t mults = lhs.getNumElements() * rhs.getDimSize(1);
  return {mults, 2 * mults};
}
