//===- Costs.cpp - CostOpInterface of every tg op -------------------------===//
//
// The per-element FLOP counts are the model documented in docs/stats.md;
// matrix products are exact. Ops that only move data cost nothing.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

int64_t numel(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getNumElements();
}

OpCost elementwise(Value v, int64_t perElement) {
  return {0, perElement * numel(v)};
}

OpCost products(int64_t multiplications, int64_t extraFlops = 0) {
  return {multiplications, 2 * multiplications + extraFlops};
}

/// Score pairs of attention over `query` and `key`: B · Hq · S · Skv, the
/// whole square even when causal (the usual count of model FLOPs). With a
/// window W < S only the pairs less than W apart, |i − j| < W, of that
/// square: S·(2W − 1) − W·(W − 1) per head, so that a window of S counts
/// as no window.
int64_t attentionPairs(Value query, Value key, std::optional<uint64_t> window) {
  auto q = llvm::cast<RankedTensorType>(query.getType());
  auto k = llvm::cast<RankedTensorType>(key.getType());
  int64_t heads = q.getDimSize(0) * q.getDimSize(2), s = q.getDimSize(1);
  if (window && static_cast<int64_t>(*window) < s) {
    int64_t w = *window;
    return heads * (s * (2 * w - 1) - w * (w - 1));
  }
  return heads * s * k.getDimSize(1);
}

} // namespace

//===----------------------------------------------------------------------===//
// Data movement: no arithmetic
//===----------------------------------------------------------------------===//

OpCost ConstantOp::getCost() { return {}; }
OpCost ReshapeOp::getCost() { return {}; }
OpCost TransposeOp::getCost() { return {}; }
OpCost BroadcastOp::getCost() { return {}; }
OpCost SliceOp::getCost() { return {}; }
OpCost PadOp::getCost() { return {}; }
OpCost EmbeddingOp::getCost() { return {}; }
OpCost ClipFactorOp::getCost() { return {}; }
OpCost LossScaleUpdateOp::getCost() { return {}; }
OpCost NotFiniteOp::getCost() { return {}; }
// Communication moves bytes between processes; its arithmetic is the
// runtime's (MPI's reduction), not the step's.
OpCost AllReduceStartOp::getCost() { return {}; }
OpCost CollectiveWaitOp::getCost() { return {}; }
OpCost ReduceScatterStartOp::getCost() { return {}; }
OpCost AllGatherStartOp::getCost() { return {}; }
OpCost ParameterGatherStartOp::getCost() { return {}; }
OpCost SumOverProcessesOp::getCost() { return {}; }
OpCost ShardOp::getCost() { return {}; }

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

OpCost MatmulOp::getCost() {
  auto lhs = getLhs().getType();
  int64_t k =
      getTransposeLhs() ? lhs.getShape().end()[-2] : lhs.getShape().back();
  return products(numel(getResult()) * k);
}

OpCost LinearOp::getCost() {
  int64_t in = getWeight().getType().getDimSize(1);
  int64_t outputs = numel(getResult());
  return products(outputs * in, getBias() ? outputs : 0);
}

/// Logits of the fused vocabulary projection: rows · V.
int64_t fusedLogits(RankedTensorType input, RankedTensorType weight) {
  return input.getNumElements() / input.getShape().back() *
         weight.getDimSize(0);
}

OpCost LinearCrossEntropyOp::getCost() {
  int64_t logits = fusedLogits(getInput().getType(), getWeight().getType());
  int64_t d = getWeight().getType().getDimSize(1);
  // The logits, input_grad and weight_grad: three products of the
  // projection's size (the unfused forward and backward together); the
  // bias (and its gradient), the loss and its gradient per logit. A
  // gradient nothing reads is not computed (the lowering skips a frozen
  // weight's, or the input's when nothing below the head trains).
  int64_t computed =
      1 + !getInputGrad().use_empty() + !getWeightGrad().use_empty();
  int64_t bias = getBias() ? (getBiasGrad().use_empty() ? 1 : 2) * logits : 0;
  return products(computed * logits * d, bias + 10 * logits);
}

OpCost AttentionOp::getCost() {
  // At positions every query scores the whole cache (masked where it must
  // not look): the work does not depend on the positions.
  int64_t pairs = attentionPairs(
      getQuery(), getKey(),
      getPositions() ? std::nullopt : std::optional<uint64_t>(getWindow()));
  int64_t d = getQuery().getType().getDimSize(3),
          dv = getValue().getType().getDimSize(3);
  // Q·Kᵀ and P·V, plus scaling and the softmax of every score (and its
  // soft cap: a division, a tanh, a product).
  return products(pairs * (d + dv), (getSoftcap() ? 9 : 6) * pairs);
}

OpCost AttentionGradOp::getCost() {
  int64_t pairs = attentionPairs(getQuery(), getKey(), getWindow());
  int64_t d = getQuery().getType().getDimSize(3),
          dv = getValue().getType().getDimSize(3);
  // Recomputed scores Q·Kᵀ, then dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K,
  // dK = dSᵀ·Q; softmax recomputation and its gradient per score (with a
  // soft cap, its recomputation and derivative too).
  return products(pairs * (3 * d + 2 * dv), (getSoftcap() ? 16 : 10) * pairs);
}

//===----------------------------------------------------------------------===//
// Elementwise, reductions, norms, losses: FLOPs per element
//===----------------------------------------------------------------------===//

OpCost AddOp::getCost() { return elementwise(getResult(), 1); }
OpCost SubOp::getCost() { return elementwise(getResult(), 1); }
OpCost MulOp::getCost() { return elementwise(getResult(), 1); }
OpCost ScaleOp::getCost() { return elementwise(getResult(), 1); }
OpCost CastOp::getCost() { return elementwise(getResult(), 1); }
OpCost ReluOp::getCost() { return elementwise(getResult(), 1); }
OpCost ReluGradOp::getCost() { return elementwise(getResult(), 1); }
OpCost ReduceSumOp::getCost() { return elementwise(getInput(), 1); }
OpCost GeluOp::getCost() { return elementwise(getResult(), 8); }
OpCost GeluGradOp::getCost() { return elementwise(getResult(), 12); }
OpCost SiluOp::getCost() { return elementwise(getResult(), 4); }
OpCost SigmoidOp::getCost() { return elementwise(getResult(), 3); }
OpCost SigmoidGradOp::getCost() { return elementwise(getResult(), 3); }
OpCost SiluGradOp::getCost() { return elementwise(getResult(), 7); }
OpCost SoftmaxOp::getCost() { return elementwise(getResult(), 5); }
OpCost SoftmaxGradOp::getCost() { return elementwise(getResult(), 4); }
OpCost RMSNormOp::getCost() { return elementwise(getResult(), 4); }
OpCost RMSNormGradOp::getCost() { return elementwise(getInputGrad(), 11); }
OpCost LayerNormOp::getCost() { return elementwise(getResult(), 8); }
OpCost LayerNormGradOp::getCost() { return elementwise(getInputGrad(), 14); }
OpCost RopeOp::getCost() {
  // Three FLOPs per rotated element; the pass-through dimensions are copies.
  int64_t D = getType().getDimSize(3);
  return {0, 3 * numel(getResult()) / D * getRotatedDims()};
}
OpCost EmbeddingGradOp::getCost() { return elementwise(getGrad(), 1); }
OpCost CacheUpdateOp::getCost() { return {}; }
// A soft cap adds a division, a tanh and a product per logit, and its
// slope three more in the gradient.
OpCost CrossEntropyOp::getCost() {
  return elementwise(getLogits(), getSoftcap() ? 7 : 4);
}
OpCost CrossEntropyGradOp::getCost() {
  return elementwise(getResult(), getSoftcap() ? 12 : 6);
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

OpCost SumSquaresOp::getCost() { return elementwise(getInput(), 2); }
OpCost GlobalNormOp::getCost() {
  return OpCost{0, static_cast<int64_t>(getSums().size())};
}

OpCost SGDUpdateOp::getCost() { return elementwise(getNewParam(), 4); }
OpCost SGDMomentumUpdateOp::getCost() { return elementwise(getNewParam(), 6); }
OpCost AdamWUpdateOp::getCost() { return elementwise(getNewParam(), 14); }
