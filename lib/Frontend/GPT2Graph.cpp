//===- GPT2Graph.cpp - GPT-2 → tg ---------------------------------------===//
//
// GPT2LMHeadModel. Conv1D weights are [in, out]: x @ W + b.
//
//===----------------------------------------------------------------------===//

#include "ForwardBuilder.h"

#include <cmath>
#include <numeric>

namespace tgc::frontend {

void ForwardBuilder::declareGPT2Params() {
  int64_t d = config.hiddenSize, ff = config.intermediateSize;
  declareParam("transformer.wte.weight", {config.vocabSize, d});
  declareParam("transformer.wpe.weight", {config.maxPositions, d});
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "transformer.h." + std::to_string(i) + ".";
    auto conv1d = [&](const std::string &name, int64_t in, int64_t out) {
      declareParam(p + name + ".weight", {in, out});
      declareParam(p + name + ".bias", {out});
    };
    declareParam(p + "ln_1.weight", {d});
    declareParam(p + "ln_1.bias", {d});
    conv1d("attn.c_attn", d, 3 * d);
    conv1d("attn.c_proj", d, d);
    declareParam(p + "ln_2.weight", {d});
    declareParam(p + "ln_2.bias", {d});
    conv1d("mlp.c_fc", d, ff);
    conv1d("mlp.c_proj", ff, d);
  }
  declareParam("transformer.ln_f.weight", {d});
  declareParam("transformer.ln_f.bias", {d});
}

Value ForwardBuilder::conv1d(Value x, const std::string &prefix) {
  Location l = loc(prefix);
  Value y = MatmulOp::create(b, l, x, param(prefix + ".weight"));
  return add(y, param(prefix + ".bias"), l);
}

Value ForwardBuilder::layerNorm(Value x, const std::string &prefix) {
  return LayerNormOp::create(b, loc(prefix), x, param(prefix + ".weight"),
                             param(prefix + ".bias"),
                             b.getF64FloatAttr(config.normEps));
}

Value ForwardBuilder::gpt2Attention(Value x, const std::string &p) {
  int64_t d = config.hiddenSize, h = config.numHeads, dh = config.headDim;
  Value qkv = conv1d(x, p + "c_attn");
  Location l = loc(p.substr(0, p.size() - 1));
  auto part = [&](int64_t index) {
    Value s = SliceOp::create(b, l, qkv, /*axis=*/2, index * d, d);
    return reshape(s, {B(), S(), h, dh}, l);
  };
  Value q = part(0), k = part(1), v = part(2);
  Value a = causalAttention(q, k, v, /*layer=*/0, l);
  a = reshape(a, {B(), S(), d}, l);
  return conv1d(a, p + "c_proj");
}

Value ForwardBuilder::buildGPT2() {
  Value ids = inputs[0], targets = inputs[1];
  Value pos;
  if (generation) {
    pos = generation->positions;
  } else {
    std::vector<int32_t> positions(S());
    std::iota(positions.begin(), positions.end(), 0);
    auto posType = RankedTensorType::get({S()}, idType);
    pos = ConstantOp::create(
        b, loc("transformer.wpe"),
        DenseElementsAttr::get(posType, ArrayRef<int32_t>(positions)));
  }
  Value tok = EmbeddingOp::create(b, loc("transformer.wte"),
                                  param("transformer.wte.weight"), ids);
  Value pe = EmbeddingOp::create(b, loc("transformer.wpe"),
                                 param("transformer.wpe.weight"), pos);
  Value h = add(tok, pe, loc("transformer.wpe"));
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "transformer.h." + std::to_string(i) + ".";
    inLayer(i, [&] {
      Value n = layerNorm(h, p + "ln_1");
      h = add(h, gpt2Attention(n, p + "attn."), loc(p + "residual"));
      n = layerNorm(h, p + "ln_2");
      Value f = conv1d(n, p + "mlp.c_fc");
      f = activation(f, loc(p + "mlp.act"));
      h = add(h, conv1d(f, p + "mlp.c_proj"), loc(p + "residual"));
    });
  }
  return outputOf(
      h, [&](Value x) { return layerNorm(x, "transformer.ln_f"); },
      param("transformer.wte.weight"), "lm_head", targets);
}

} // namespace tgc::frontend
