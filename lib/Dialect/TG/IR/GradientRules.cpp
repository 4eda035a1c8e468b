//===- GradientRules.cpp - vector-Jacobian rules of tg ops ----------------===//
//
// Each differentiable op's implementation of GradientOpInterface. A rule
// builds gradients only for operands whose `needsGrad` entry is set, reads
// forward values directly (so the backward's memory is visible in the IR),
// and returns gradients with the operand's exact type.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"

#include <numeric>

using namespace mlir;
using namespace mlir::tg;

namespace {

RankedTensorType tensorType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

/// Sums `grad` over the dimensions that broadcasting added to reach its shape
/// from `target`'s (leading dimensions, and dimensions of size 1 in target).
Value sumToShape(OpBuilder &b, Location loc, Value grad,
                 RankedTensorType target) {
  RankedTensorType type = tensorType(grad);
  if (type == target)
    return grad;
  ArrayRef<int64_t> g = type.getShape(), t = target.getShape();
  int64_t lead = g.size() - t.size();
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < static_cast<int64_t>(g.size()); ++i)
    if (i < lead || (t[i - lead] == 1 && g[i] != 1))
      dims.push_back(i);
  Value sum = grad;
  if (!dims.empty())
    sum = ReduceSumOp::create(b, loc, grad, dims, /*keep_dims=*/false);
  if (tensorType(sum) != target)
    sum = ReshapeOp::create(b, loc, target, sum);
  return sum;
}

/// Reshapes `[..., n]` to the matrix `[prod(...), n]`.
Value flattenToMatrix(OpBuilder &b, Location loc, Value v) {
  RankedTensorType type = tensorType(v);
  int64_t cols = type.getRank() ? type.getShape().back() : 1;
  int64_t rows = type.getNumElements() / std::max<int64_t>(cols, 1);
  RankedTensorType matrix = type.clone({rows, cols});
  if (matrix == type)
    return v;
  return ReshapeOp::create(b, loc, matrix, v);
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  return tensorType(v) == type ? v : ReshapeOp::create(b, loc, type, v);
}

/// Pushes `grad` for operand `index` when it needs one, else a null Value.
void push(SmallVectorImpl<Value> &grads, ArrayRef<bool> needsGrad,
          unsigned index, function_ref<Value()> build) {
  grads.push_back(needsGrad[index] ? build() : Value());
}

} // namespace

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

LogicalResult CastOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    ArrayRef<bool> needsGrad,
                                    SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    return CastOp::create(b, getLoc(), getInput().getType(), resultGrads[0]);
  });
  return success();
}

LogicalResult ReshapeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       ArrayRef<bool> needsGrad,
                                       SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    return ReshapeOp::create(b, getLoc(), getInput().getType(), resultGrads[0]);
  });
  return success();
}

LogicalResult TransposeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         ArrayRef<bool> needsGrad,
                                         SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    ArrayRef<int64_t> perm = getPermutation();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = i;
    return TransposeOp::create(b, getLoc(), resultGrads[0], inverse);
  });
  return success();
}

LogicalResult BroadcastOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         ArrayRef<bool> needsGrad,
                                         SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&] {
    return sumToShape(b, getLoc(), resultGrads[0], getInput().getType());
  });
  return success();
}

LogicalResult ReduceSumOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         ArrayRef<bool> needsGrad,
                                         SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    RankedTensorType input = getInput().getType();
    SmallVector<int64_t> kept(input.getShape());
    for (int64_t d : getDims())
      kept[d] = 1;
    Value g = reshapeTo(b, getLoc(), resultGrads[0], input.clone(kept));
    return BroadcastOp::create(b, getLoc(), input, g);
  });
  return success();
}

LogicalResult SliceOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                     ArrayRef<bool> needsGrad,
                                     SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    int64_t dim = getInput().getType().getDimSize(getAxis());
    return PadOp::create(b, getLoc(), getInput().getType(), resultGrads[0],
                         getAxis(), getStart(), dim - getStart() - getSize());
  });
  return success();
}

LogicalResult PadOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   ArrayRef<bool> needsGrad,
                                   SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    return SliceOp::create(b, getLoc(), resultGrads[0], getAxis(), getLow(),
                           getInput().getType().getDimSize(getAxis()));
  });
  return success();
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

namespace {
/// `lhs`·`rhs` (operands transposed as asked) returning `resultElement`
/// elements: the operands' type, or f32 accumulation of bf16/f16 operands.
Value product(OpBuilder &b, Location loc, Value lhs, Value rhs, bool ta,
              bool tb, Type resultElement) {
  auto op = MatmulOp::create(b, loc, lhs, rhs, ta, tb);
  if (op.getType().getElementType() != resultElement)
    op.getResult().setType(op.getType().clone(resultElement));
  return op;
}

/// The gradient `g` (of the product's result type) in the operands'
/// element type `operand`: cast down for a mixed-precision product.
Value toOperandPrecision(OpBuilder &b, Location loc, Value g, Type operand) {
  RankedTensorType type = tensorType(g);
  if (type.getElementType() == operand)
    return g;
  return CastOp::create(b, loc, type.clone(operand), g);
}
} // namespace

LogicalResult MatmulOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      ArrayRef<bool> needsGrad,
                                      SmallVectorImpl<Value> &grads) {
  // With a = op(A), b = op(B): da = dC·bᵀ, db = aᵀ·dC, and dA / dB are
  // da / db transposed back when the forward transposed them. A
  // mixed-precision product (bf16 operands, f32 result) takes dC in bf16,
  // accumulates its products in f32 (also any batch sum), and rounds each
  // operand's gradient to bf16 once, as autocast does.
  Location loc = getLoc();
  Type low = getLhs().getType().getElementType();
  Type acc = getType().getElementType();
  Value dC = toOperandPrecision(b, loc, resultGrads[0], low);
  Value A = getLhs(), B = getRhs();
  bool ta = getTransposeLhs(), tb = getTransposeRhs();
  RankedTensorType aType = getLhs().getType(), bType = getRhs().getType();
  bool batched = getType().getRank() > 2;
  auto finish = [&](Value g, RankedTensorType type) {
    return toOperandPrecision(b, loc, sumToShape(b, loc, g, type.clone(acc)),
                              low);
  };

  push(grads, needsGrad, 0, [&]() -> Value {
    Value dA = ta ? product(b, loc, B, dC, /*ta=*/tb, /*tb=*/true, acc)
                  : product(b, loc, dC, B, /*ta=*/false, /*tb=*/!tb, acc);
    return finish(dA, aType);
  });
  push(grads, needsGrad, 1, [&]() -> Value {
    // A shared weight matrix of a batched product (x @ W): fold the batch
    // into the rows so one matrix product yields the summed gradient.
    if (batched && bType.getRank() == 2 && !ta) {
      Value aFlat = flattenToMatrix(b, loc, A);
      Value dCFlat = flattenToMatrix(b, loc, dC);
      return finish(tb ? product(b, loc, dCFlat, aFlat, true, false, acc)
                       : product(b, loc, aFlat, dCFlat, true, false, acc),
                    bType);
    }
    Value dB = tb ? product(b, loc, dC, A, /*ta=*/true, /*tb=*/ta, acc)
                  : product(b, loc, A, dC, /*ta=*/!ta, /*tb=*/false, acc);
    return finish(dB, bType);
  });
  return success();
}

LogicalResult LinearOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                      ArrayRef<bool> needsGrad,
                                      SmallVectorImpl<Value> &grads) {
  // y = x·Wᵀ + b on rows: dx = dy·W, dW = dyᵀ·x, db = Σ_rows dy. Mixed
  // precision as for tg.matmul; db sums the f32 dy.
  Location loc = getLoc();
  Type low = getInput().getType().getElementType();
  Type acc = getType().getElementType();
  Value dyAcc = flattenToMatrix(b, loc, resultGrads[0]);
  Value dy = toOperandPrecision(b, loc, dyAcc, low);
  push(grads, needsGrad, 0, [&]() -> Value {
    Value dx = product(b, loc, dy, getWeight(), false, false, acc);
    return toOperandPrecision(
        b, loc, reshapeTo(b, loc, dx, getInput().getType().clone(acc)), low);
  });
  push(grads, needsGrad, 1, [&]() -> Value {
    Value x = flattenToMatrix(b, loc, getInput());
    return toOperandPrecision(
        b, loc, product(b, loc, dy, x, /*ta=*/true, false, acc), low);
  });
  if (getBias())
    push(grads, needsGrad, 2, [&]() -> Value {
      return toOperandPrecision(
          b, loc,
          ReduceSumOp::create(b, loc, dyAcc, ArrayRef<int64_t>{0}, false), low);
    });
  return success();
}

LogicalResult GroupedMatmulOp::buildGradient(OpBuilder &b,
                                             ValueRange resultGrads,
                                             ArrayRef<bool> needsGrad,
                                             SmallVectorImpl<Value> &grads) {
  // Per expert e on its rows: y = x·op(W_e), so dx = dy·op(W_e)ᵀ (the same
  // grouping with the other orientation) and dW_e = dyᵀ·x (transposed
  // weights) or xᵀ·dy. Mixed precision as for tg.matmul.
  Location loc = getLoc();
  RankedTensorType input = getInput().getType();
  Type low = input.getElementType();
  Type acc = getType().getElementType();
  Value dy = toOperandPrecision(b, loc, resultGrads[0], low);
  bool t = getTransposeWeights();
  push(grads, needsGrad, 0, [&]() -> Value {
    auto dx = GroupedMatmulOp::create(b, loc, input.clone(acc), dy,
                                      getOffsets(), getWeights(), !t);
    return toOperandPrecision(b, loc, dx, low);
  });
  grads.push_back(Value()); // integer offsets
  bool anyWeight = llvm::any_of(needsGrad.drop_front(2), [](bool n) { return n; });
  if (!anyWeight) {
    grads.append(getWeights().size(), Value());
    return success();
  }
  auto weightType = llvm::cast<RankedTensorType>(getWeights().front().getType());
  SmallVector<Type> types(getWeights().size(), weightType.clone(acc));
  auto dW = t ? GroupedWeightGradOp::create(b, loc, types, dy, getInput(),
                                            getOffsets())
              : GroupedWeightGradOp::create(b, loc, types, getInput(), dy,
                                            getOffsets());
  for (auto [i, g] : llvm::enumerate(dW.getResults()))
    grads.push_back(needsGrad[2 + i] ? toOperandPrecision(b, loc, g, low)
                                     : Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   ArrayRef<bool> needsGrad,
                                   SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&] {
    return sumToShape(b, getLoc(), resultGrads[0], getLhs().getType());
  });
  push(grads, needsGrad, 1, [&] {
    return sumToShape(b, getLoc(), resultGrads[0], getRhs().getType());
  });
  return success();
}

LogicalResult SubOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   ArrayRef<bool> needsGrad,
                                   SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&] {
    return sumToShape(b, getLoc(), resultGrads[0], getLhs().getType());
  });
  push(grads, needsGrad, 1, [&] {
    Value neg =
        ScaleOp::create(b, getLoc(), resultGrads[0], b.getF64FloatAttr(-1.0));
    return sumToShape(b, getLoc(), neg, getRhs().getType());
  });
  return success();
}

LogicalResult MulOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                   ArrayRef<bool> needsGrad,
                                   SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&] {
    Value g = MulOp::create(b, getLoc(), resultGrads[0], getRhs());
    return sumToShape(b, getLoc(), g, getLhs().getType());
  });
  push(grads, needsGrad, 1, [&] {
    Value g = MulOp::create(b, getLoc(), resultGrads[0], getLhs());
    return sumToShape(b, getLoc(), g, getRhs().getType());
  });
  return success();
}

LogicalResult ScaleOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                     ArrayRef<bool> needsGrad,
                                     SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    return ScaleOp::create(b, getLoc(), resultGrads[0], getFactorAttr());
  });
  return success();
}

LogicalResult ReluOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    ArrayRef<bool> needsGrad,
                                    SmallVectorImpl<Value> &grads) {
  // The mask comes from the output, so only the output stays alive.
  push(grads, needsGrad, 0, [&]() -> Value {
    return ReluGradOp::create(b, getLoc(), resultGrads[0], getResult());
  });
  return success();
}

LogicalResult GeluOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    ArrayRef<bool> needsGrad,
                                    SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    return GeluGradOp::create(b, getLoc(), resultGrads[0], getInput(),
                              getApproximateAttr());
  });
  return success();
}

LogicalResult SiluOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    ArrayRef<bool> needsGrad,
                                    SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    return SiluGradOp::create(b, getLoc(), resultGrads[0], getInput());
  });
  return success();
}

LogicalResult SigmoidOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       ArrayRef<bool> needsGrad,
                                       SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    return SigmoidGradOp::create(b, getLoc(), resultGrads[0], getResult());
  });
  return success();
}

LogicalResult SoftmaxOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       ArrayRef<bool> needsGrad,
                                       SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    return SoftmaxGradOp::create(b, getLoc(), resultGrads[0], getResult(),
                                 getAxis());
  });
  return success();
}

//===----------------------------------------------------------------------===//
// Transformer
//===----------------------------------------------------------------------===//

LogicalResult RouteOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                     ArrayRef<bool> needsGrad,
                                     SmallVectorImpl<Value> &grads) {
  // Only the weights carry a gradient; the chosen experts are integers.
  if (!resultGrads[0]) {
    grads.push_back(Value());
    return success();
  }
  push(grads, needsGrad, 0, [&]() -> Value {
    return RouteGradOp::create(b, getLoc(), getLogits().getType(),
                               resultGrads[0], getLogits(), getExperts(),
                               getNormalize());
  });
  return success();
}

LogicalResult EmbeddingOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         ArrayRef<bool> needsGrad,
                                         SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    return EmbeddingGradOp::create(b, getLoc(), getTable().getType(),
                                   resultGrads[0], getIndices());
  });
  grads.push_back(Value()); // integer ids
  return success();
}

LogicalResult RMSNormOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                       ArrayRef<bool> needsGrad,
                                       SmallVectorImpl<Value> &grads) {
  auto grad = RMSNormGradOp::create(b, getLoc(), resultGrads[0], getInput(),
                                    getWeight(), getEpsAttr());
  grads.push_back(needsGrad[0] ? grad.getInputGrad() : Value());
  grads.push_back(needsGrad[1] ? grad.getWeightGrad() : Value());
  return success();
}

LogicalResult LayerNormOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         ArrayRef<bool> needsGrad,
                                         SmallVectorImpl<Value> &grads) {
  auto grad = LayerNormGradOp::create(b, getLoc(), resultGrads[0], getInput(),
                                      getWeight(), getEpsAttr());
  grads.push_back(needsGrad[0] ? grad.getInputGrad() : Value());
  grads.push_back(needsGrad[1] ? grad.getWeightGrad() : Value());
  if (getBias())
    grads.push_back(needsGrad[2] ? grad.getBiasGrad() : Value());
  return success();
}

LogicalResult RopeOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    ArrayRef<bool> needsGrad,
                                    SmallVectorImpl<Value> &grads) {
  // RoPE is a rotation: its transpose rotates by the opposite angle.
  push(grads, needsGrad, 0, [&]() -> Value {
    return RopeOp::create(b, getLoc(), resultGrads[0], getThetaAttr(),
                          getFrequenciesAttr(),
                          getInverse() ? UnitAttr() : b.getUnitAttr(),
                          getRotaryDimsAttr(), getPositions(),
                          getMaxPositionAttr());
  });
  return success();
}

LogicalResult AttentionOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                         ArrayRef<bool> needsGrad,
                                         SmallVectorImpl<Value> &grads) {
  if (getValue().getType().getDimSize(3) != getQuery().getType().getDimSize(3))
    return emitOpError("gradient needs the value head size to equal the "
                       "query/key head size");
  if (resultGrads[1])
    return emitOpError("has no gradient rule for its logsumexp result");
  if (getPositions())
    return emitOpError("at positions (a KV cache) has no gradient rule: it "
                       "serves generation");
  auto grad = AttentionGradOp::create(
      b, getLoc(), resultGrads[0], getQuery(), getKey(), getValue(),
      getResult(), getLogsumexp(), getCausal(), getScaleAttr(),
      getWindowAttr(), getSoftcapAttr());
  grads.push_back(needsGrad[0] ? grad.getQueryGrad() : Value());
  grads.push_back(needsGrad[1] ? grad.getKeyGrad() : Value());
  grads.push_back(needsGrad[2] ? grad.getValueGrad() : Value());
  return success();
}

// The logsumexp rebuilds the probabilities (exp(s - lse)): rounding it to
// bf16 would shift every probability of its row by up to ~2%.
bool AttentionOp::keepsResultAtFullPrecision(unsigned index) {
  return index == llvm::cast<OpResult>(getLogsumexp()).getResultNumber();
}

LogicalResult
LinearCrossEntropyOp::buildGradient(OpBuilder &b, ValueRange resultGrads,
                                    ArrayRef<bool> needsGrad,
                                    SmallVectorImpl<Value> &grads) {
  // The op computed the gradients for an upstream gradient of 1: scale them
  // (a train step's seed is 1, and x·1 folds away).
  Location loc = getLoc();
  Value g = resultGrads[0];
  auto scaled = [&](Value grad) -> Value {
    return g ? MulOp::create(b, loc, g, grad).getResult() : Value();
  };
  grads.push_back(needsGrad[0] ? scaled(getInputGrad()) : Value());
  grads.push_back(needsGrad[1] ? scaled(getWeightGrad()) : Value());
  if (getBias())
    grads.push_back(needsGrad[2] ? scaled(getBiasGrad()) : Value());
  grads.push_back(Value()); // integer targets
  return success();
}

// Its results besides the loss are gradients, computed in the forward sweep.
bool LinearCrossEntropyOp::keepsResultAtFullPrecision(unsigned) { return true; }

LogicalResult CrossEntropyOp::buildGradient(OpBuilder &b,
                                            ValueRange resultGrads,
                                            ArrayRef<bool> needsGrad,
                                            SmallVectorImpl<Value> &grads) {
  push(grads, needsGrad, 0, [&]() -> Value {
    return CrossEntropyGradOp::create(b, getLoc(), resultGrads[0], getLogits(),
                                      getTargets(), getIgnoreIndexAttr(),
                                      getSoftcapAttr());
  });
  grads.push_back(Value()); // integer targets
  return success();
}
