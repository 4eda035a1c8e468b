//===- LlamaGraph.cpp - Llama and its kin → tg --------------------------===//
//
// LlamaForCausalLM, also for Mistral, Qwen2, Qwen3, Phi-3, Gemma 1-3
// and OLMo-2: RMSNorm, RoPE (scaled, partial), grouped-query attention
// (windows, soft caps), gated MLPs.
//
//===----------------------------------------------------------------------===//

#include "ForwardBuilder.h"

#include <cmath>
#include <numeric>

namespace tgc::frontend {

void ForwardBuilder::declareLlamaParams() {
  int64_t d = config.hiddenSize, ff = config.intermediateSize;
  int64_t qDim = config.numHeads * config.headDim;
  int64_t kvDim = config.numKVHeads * config.headDim;
  declareParam("model.embed_tokens.weight", {config.vocabSize, d});
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    auto proj = [&](const std::string &name, int64_t out, int64_t in,
                    bool bias) { declareProjection(p + name, out, in, bias); };
    if (config.fusedProjections) {
      proj("self_attn.qkv_proj", qDim + 2 * kvDim, d, false);
    } else {
      proj("self_attn.q_proj", qDim, d, config.qkvBias);
      proj("self_attn.k_proj", kvDim, d, config.qkvBias);
      proj("self_attn.v_proj", kvDim, d, config.qkvBias);
    }
    proj("self_attn.o_proj", d, qDim, config.outputBias);
    if (config.qkNorm == QKNorm::PerHead) {
      declareParam(p + "self_attn.q_norm.weight", {config.headDim});
      declareParam(p + "self_attn.k_norm.weight", {config.headDim});
    } else if (config.qkNorm == QKNorm::Projection) {
      declareParam(p + "self_attn.q_norm.weight", {qDim});
      declareParam(p + "self_attn.k_norm.weight", {kvDim});
    }
    if (config.moe.sparseLayer(i)) {
      declareExperts(p);
    } else if (config.fusedProjections) {
      proj("mlp.gate_up_proj", 2 * ff, d, false);
    } else {
      proj("mlp.gate_proj", ff, d, config.mlpBias);
      proj("mlp.up_proj", ff, d, config.mlpBias);
    }
    if (!config.moe.sparseLayer(i))
      proj("mlp.down_proj", d, ff, config.mlpBias);
    if (!config.postNorms)
      declareParam(p + "input_layernorm.weight", {d});
    declareParam(p + "post_attention_layernorm.weight", {d});
    if (config.sandwichNorms)
      declareParam(p + "pre_feedforward_layernorm.weight", {d});
    if (config.postNorms || config.sandwichNorms)
      declareParam(p + "post_feedforward_layernorm.weight", {d});
  }
  declareParam("model.norm.weight", {d});
  if (!config.tieWordEmbeddings)
    declareParam("lm_head.weight", {config.vocabSize, d});
}

Value ForwardBuilder::rmsNorm(Value x, const std::string &prefix) {
  Value weight = param(prefix + ".weight");
  if (config.gemmaScaling) {
    // GemmaRMSNorm scales by (1 + weight).
    auto type = llvm::cast<RankedTensorType>(weight.getType());
    Value one = ConstantOp::create(
        b, loc(prefix),
        DenseElementsAttr::get(type,
                               b.getFloatAttr(type.getElementType(), 1.0)));
    weight = AddOp::create(b, loc(prefix), weight, one);
  }
  return RMSNormOp::create(b, loc(prefix), x, weight,
                           b.getF64FloatAttr(config.normEps));
}

Value ForwardBuilder::llamaAttention(Value x, const std::string &p,
                                     int64_t layer) {
  int64_t hq = config.numHeads, hkv = config.numKVHeads, dh = config.headDim;
  Value q, k, v;
  if (config.fusedProjections) {
    // Phi-3's qkv_proj: the q rows, then k's, then v's.
    Value qkv = linear(x, p + "qkv_proj", false);
    Location fused = loc(p + "qkv_proj");
    q = SliceOp::create(b, fused, qkv, /*axis=*/2, 0, hq * dh);
    k = SliceOp::create(b, fused, qkv, /*axis=*/2, hq * dh, hkv * dh);
    v = SliceOp::create(b, fused, qkv, /*axis=*/2, (hq + hkv) * dh, hkv * dh);
  } else {
    q = linear(x, p + "q_proj", config.qkvBias);
    k = linear(x, p + "k_proj", config.qkvBias);
    v = linear(x, p + "v_proj", config.qkvBias);
  }
  if (config.qkNorm == QKNorm::Projection) {
    q = rmsNorm(q, p + "q_norm");
    k = rmsNorm(k, p + "k_norm");
  }
  Location l = loc(p.substr(0, p.size() - 1));
  q = reshape(q, {B(), S(), hq, dh}, loc(p + "q_proj"));
  k = reshape(k, {B(), S(), hkv, dh}, loc(p + "k_proj"));
  v = reshape(v, {B(), S(), hkv, dh}, loc(p + "v_proj"));
  if (config.qkNorm == QKNorm::PerHead) {
    q = rmsNorm(q, p + "q_norm");
    k = rmsNorm(k, p + "k_norm");
  }
  q = rope(q, p, layer);
  k = rope(k, p, layer);
  Value a = causalAttention(q, k, v, layer, l);
  a = reshape(a, {B(), S(), hq * dh}, l);
  return linear(a, p + "o_proj", config.outputBias);
}

Value ForwardBuilder::rope(Value x, const std::string &p, int64_t layer) {
  bool local = config.localRopeTheta && config.slidingLayer(layer);
  double theta = local ? *config.localRopeTheta : config.ropeTheta;
  DenseF64ArrayAttr frequencies;
  if (!local && config.ropeScaling.kind != RopeScalingKind::None)
    frequencies = b.getDenseF64ArrayAttr(ropeInverseFrequencies(config));
  IntegerAttr rotated;
  if (config.rotatedDims() != config.headDim)
    rotated = b.getI64IntegerAttr(config.rotatedDims());
  Value positions = generation ? generation->positions : Value();
  IntegerAttr maxPosition =
      generation ? b.getI64IntegerAttr(generation->cacheLength) : IntegerAttr();
  return RopeOp::create(b, loc(p + "rotary_emb"), x, b.getF64FloatAttr(theta),
                        frequencies, UnitAttr(), rotated, positions,
                        maxPosition);
}

Value ForwardBuilder::causalAttention(Value q, Value k, Value v, int64_t layer,
                                      Location l) {
  IntegerAttr window;
  if (std::optional<int64_t> w = config.attentionWindow(layer))
    window = b.getI64IntegerAttr(*w);
  FloatAttr scale, softcap;
  if (config.attentionScale)
    scale = b.getF64FloatAttr(*config.attentionScale);
  if (config.attentionSoftcap)
    softcap = b.getF64FloatAttr(*config.attentionSoftcap);
  if (generation) {
    // This step's keys and values go into the layer's caches at their
    // positions; the queries then attend over the caches.
    Value positions = generation->positions;
    Value &kc = generation->updated[2 * currentLayer];
    Value &vc = generation->updated[2 * currentLayer + 1];
    kc = CacheUpdateOp::create(b, l, generation->caches[2 * currentLayer], k,
                               positions);
    vc = CacheUpdateOp::create(b, l, generation->caches[2 * currentLayer + 1],
                               v, positions);
    return AttentionOp::create(b, l, q, kc, vc, /*causal=*/true, scale, window,
                               softcap, positions)
        .getResult();
  }
  return AttentionOp::create(b, l, q, k, v, /*causal=*/true, scale, window,
                             softcap, /*positions=*/Value())
      .getResult();
}

Value ForwardBuilder::llamaMLP(Value x, const std::string &p) {
  Value gate, up;
  if (config.fusedProjections) {
    // Phi-3's gate_up_proj: the gate's rows, then up's.
    int64_t ff = config.intermediateSize;
    Value gateUp = linear(x, p + "gate_up_proj", false);
    Location fused = loc(p + "gate_up_proj");
    gate = SliceOp::create(b, fused, gateUp, /*axis=*/2, 0, ff);
    up = SliceOp::create(b, fused, gateUp, /*axis=*/2, ff, ff);
  } else {
    gate = linear(x, p + "gate_proj", config.mlpBias);
    up = linear(x, p + "up_proj", config.mlpBias);
  }
  Value act = activation(gate, loc(p + "act_fn"));
  Value prod = MulOp::create(b, loc(p + "act_fn"), act, up);
  return linear(prod, p + "down_proj", config.mlpBias);
}

Value ForwardBuilder::buildLlama() {
  Value ids = inputs[0], targets = inputs[1];
  Value h = EmbeddingOp::create(b, loc("model.embed_tokens"),
                                param("model.embed_tokens.weight"), ids);
  if (config.gemmaScaling) {
    // GemmaModel's normalizer: sqrt(hidden_size), rounded to the
    // activations' type where the lowering makes it a constant of it.
    double normalizer = std::sqrt(static_cast<double>(config.hiddenSize));
    h = ScaleOp::create(b, loc("model.normalizer"), h,
                        b.getF64FloatAttr(normalizer));
  }
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    inLayer(i, [&] {
      if (config.sandwichNorms) {
        // Gemma2DecoderLayer, Gemma3DecoderLayer: each block's input and
        // output normalised, the output then added to the residual.
        Value n = rmsNorm(h, p + "input_layernorm");
        Value a = llamaAttention(n, p + "self_attn.", i);
        h = add(h, rmsNorm(a, p + "post_attention_layernorm"),
                loc(p + "residual"));
        n = rmsNorm(h, p + "pre_feedforward_layernorm");
        Value m = llamaMLP(n, p + "mlp.");
        h = add(h, rmsNorm(m, p + "post_feedforward_layernorm"),
                loc(p + "residual"));
        return;
      }
      if (config.postNorms) {
        // Olmo2DecoderLayer: each block's output is normalised, then
        // added to the residual stream.
        Value a = llamaAttention(h, p + "self_attn.", i);
        h = add(h, rmsNorm(a, p + "post_attention_layernorm"),
                loc(p + "residual"));
        Value m = feedForward(h, p, i);
        h = add(h, rmsNorm(m, p + "post_feedforward_layernorm"),
                loc(p + "residual"));
        return;
      }
      Value n = rmsNorm(h, p + "input_layernorm");
      h = add(h, llamaAttention(n, p + "self_attn.", i), loc(p + "residual"));
      n = rmsNorm(h, p + "post_attention_layernorm");
      h = add(h, feedForward(n, p, i), loc(p + "residual"));
    });
  }
  Value head = config.tieWordEmbeddings ? param("model.embed_tokens.weight")
                                        : param("lm_head.weight");
  Value out = outputOf(
      h, [&](Value x) { return rmsNorm(x, "model.norm"); }, head, "lm_head",
      targets);
  return generation ? out : withBalanceLoss(out);
}

} // namespace tgc::frontend
