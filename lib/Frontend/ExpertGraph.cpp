//===- ExpertGraph.cpp - mixture-of-experts blocks → tg -----------------===//
//
// Mixtral, Qwen2-MoE, Qwen3-MoE and OLMoE: dropless top-k routing, each
// expert's gated MLP on exactly the rows routed to it, and the
// load-balancing loss.
//
//===----------------------------------------------------------------------===//

#include "ForwardBuilder.h"

#include <cmath>
#include <numeric>

namespace tgc::frontend {

ForwardBuilder::ExpertNames
ForwardBuilder::expertNames(const std::string &p) const {
  if (config.moe.mixtralNames)
    return {p + "block_sparse_moe.", "w1", "w3", "w2"};
  return {p + "mlp.", "gate_proj", "up_proj", "down_proj"};
}

void ForwardBuilder::declareExperts(const std::string &p) {
  const MoEConfig &m = config.moe;
  int64_t d = config.hiddenSize, f = m.expertSize;
  ExpertNames n = expertNames(p);
  declareProjection(n.block + "gate", m.numExperts, d, false);
  for (int64_t j = 0; j < m.numExperts; ++j) {
    // Mixtral's modules are w1, w2, w3; the others gate, up, down.
    if (m.mixtralNames) {
      declareProjection(n.expert(j, n.gate), f, d, false);
      declareProjection(n.expert(j, n.down), d, f, false);
      declareProjection(n.expert(j, n.up), f, d, false);
    } else {
      declareProjection(n.expert(j, n.gate), f, d, false);
      declareProjection(n.expert(j, n.up), f, d, false);
      declareProjection(n.expert(j, n.down), d, f, false);
    }
  }
  if (m.sharedExpertSize) {
    int64_t fs = m.sharedExpertSize;
    declareProjection(n.block + "shared_expert.gate_proj", fs, d, false);
    declareProjection(n.block + "shared_expert.up_proj", fs, d, false);
    declareProjection(n.block + "shared_expert.down_proj", d, fs, false);
    declareProjection(n.block + "shared_expert_gate", 1, d, false);
  }
}

SmallVector<Value> ForwardBuilder::expertWeights(const ExpertNames &n,
                                                 const std::string &proj) {
  SmallVector<Value> weights;
  for (int64_t j = 0; j < config.moe.numExperts; ++j)
    weights.push_back(param(n.expert(j, proj) + ".weight"));
  return weights;
}

Value ForwardBuilder::expertBlock(Value x, const std::string &p) {
  const MoEConfig &m = config.moe;
  int64_t d = config.hiddenSize, tokens = B() * S(), k = m.topK;
  ExpertNames n = expertNames(p);
  Location l = loc(n.block.substr(0, n.block.size() - 1));
  Location expertsLoc = loc(n.block + "experts");
  Value rowsIn = reshape(x, {tokens, d}, l);
  Value logits = linear(rowsIn, n.block + "gate", false);
  auto route = RouteOp::create(
      b, loc(n.block + "gate"),
      tensor({tokens, k}).clone(floatType.isF64() ? floatType : b.getF32Type()),
      RankedTensorType::get({tokens, k}, b.getI32Type()), logits,
      b.getI64IntegerAttr(k), m.normalizeTopK ? b.getUnitAttr() : UnitAttr());
  Value weights = route.getWeights();
  // Hugging Face casts the weights to the hidden states' type.
  if (llvm::cast<RankedTensorType>(weights.getType()).getElementType() !=
      floatType)
    weights = CastOp::create(b, l, tensor({tokens, k}), weights);
  auto i32 = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getI32Type());
  };
  auto dispatch = ExpertDispatchOp::create(
      b, l, i32({tokens * k}), i32({tokens, k}), i32({m.numExperts + 1}),
      route.getExperts(), b.getI64IntegerAttr(m.numExperts));
  Value offsets = dispatch.getOffsets();
  Value grouped =
      EmbeddingOp::create(b, expertsLoc, rowsIn, dispatch.getRows());
  auto product = [&](Value in, const std::string &proj, int64_t out) {
    return GroupedMatmulOp::create(b, expertsLoc, tensor({tokens * k, out}), in,
                                   offsets, expertWeights(n, proj),
                                   /*transpose_weights=*/true);
  };
  Value gate = product(grouped, n.gate, m.expertSize);
  Value up = product(grouped, n.up, m.expertSize);
  Value act = MulOp::create(b, expertsLoc, activation(gate, expertsLoc), up);
  Value down = product(act, n.down, d);
  // Back in token order: [T, k, D], weighted, summed over the k experts.
  Value perToken = EmbeddingOp::create(b, l, down, dispatch.getPositions());
  Value weighted =
      MulOp::create(b, l, perToken, reshape(weights, {tokens, k, 1}, l));
  Value y = ReduceSumOp::create(b, l, weighted, ArrayRef<int64_t>{1},
                                /*keep_dims=*/false);
  if (m.auxLoss && !generation)
    addBalanceStatistics(logits, route.getExperts(), l);
  if (m.sharedExpertSize) {
    // Qwen2MoeSparseMoeBlock: + sigmoid(shared_expert_gate(x)) ·
    // shared_expert(x).
    Value shared = llamaMLP(rowsIn, n.block + "shared_expert.");
    Value g = linear(rowsIn, n.block + "shared_expert_gate", false);
    g = SigmoidOp::create(b, loc(n.block + "shared_expert_gate"), g);
    y = add(y, MulOp::create(b, l, shared, g), l);
  }
  return reshape(y, {B(), S(), d}, l);
}

void ForwardBuilder::addBalanceStatistics(Value logits, Value experts,
                                          Location l) {
  int64_t E = config.moe.numExperts;
  Value p = SoftmaxOp::create(b, l, logits, /*axis=*/-1);
  Value sum = ReduceSumOp::create(b, l, p, ArrayRef<int64_t>{0},
                                  /*keep_dims=*/false);
  Value counts = ExpertCountsOp::create(b, l, tensor({E}), experts,
                                        b.getI64IntegerAttr(E));
  balanceProbabilities =
      balanceProbabilities ? add(balanceProbabilities, sum, l) : sum;
  balanceCounts = balanceCounts ? add(balanceCounts, counts, l) : counts;
  ++balanceLayers;
}

Value ForwardBuilder::withBalanceLoss(Value loss) {
  if (!balanceLayers)
    return loss;
  Location l = loc("aux_loss");
  double rows = static_cast<double>(balanceLayers * B() * S());
  Value prod = MulOp::create(b, l, balanceProbabilities, balanceCounts);
  Value sum = ReduceSumOp::create(b, l, prod, ArrayRef<int64_t>{0},
                                  /*keep_dims=*/false);
  auxLoss = ScaleOp::create(
      b, l, sum,
      b.getF64FloatAttr(static_cast<double>(config.moe.numExperts) /
                        (rows * rows)));
  return add(
      loss,
      ScaleOp::create(b, l, auxLoss, b.getF64FloatAttr(config.moe.auxLossCoef)),
      l);
}

Value ForwardBuilder::feedForward(Value x, const std::string &p,
                                  int64_t layer) {
  return config.moe.sparseLayer(layer) ? expertBlock(x, p)
                                       : llamaMLP(x, p + "mlp.");
}

} // namespace tgc::frontend
