//===- GPTNeoXGraph.cpp - GPT-NeoX → tg ---------------------------------===//
//
// GPTNeoXForCausalLM (Pythia): fused QKV, partial RoPE, the parallel
// residual where the config sets it.
//
//===----------------------------------------------------------------------===//

#include "ForwardBuilder.h"

#include <cmath>
#include <numeric>

namespace tgc::frontend {

void ForwardBuilder::declareGPTNeoXParams() {
  int64_t d = config.hiddenSize, ff = config.intermediateSize;
  declareParam("gpt_neox.embed_in.weight", {config.vocabSize, d});
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "gpt_neox.layers." + std::to_string(i) + ".";
    auto proj = [&](const std::string &name, int64_t out, int64_t in,
                    bool bias) { declareProjection(p + name, out, in, bias); };
    for (const char *norm : {"input_layernorm", "post_attention_layernorm"}) {
      declareParam(p + norm + ".weight", {d});
      declareParam(p + norm + ".bias", {d});
    }
    proj("attention.query_key_value", 3 * d, d, config.qkvBias);
    proj("attention.dense", d, d, config.outputBias);
    proj("mlp.dense_h_to_4h", ff, d, true);
    proj("mlp.dense_4h_to_h", d, ff, true);
  }
  declareParam("gpt_neox.final_layer_norm.weight", {d});
  declareParam("gpt_neox.final_layer_norm.bias", {d});
  if (!config.tieWordEmbeddings)
    declareParam("embed_out.weight", {config.vocabSize, d});
}

Value ForwardBuilder::neoxAttention(Value x, const std::string &p) {
  int64_t h = config.numHeads, dh = config.headDim;
  // query_key_value's rows are head-major: per head, its q, k and v rows.
  Value qkv = linear(x, p + "query_key_value", config.qkvBias);
  Location l = loc(p.substr(0, p.size() - 1));
  qkv = reshape(qkv, {B(), S(), h, 3 * dh}, loc(p + "query_key_value"));
  Value q = SliceOp::create(b, l, qkv, /*axis=*/3, 0, dh);
  Value k = SliceOp::create(b, l, qkv, /*axis=*/3, dh, dh);
  Value v = SliceOp::create(b, l, qkv, /*axis=*/3, 2 * dh, dh);
  q = rope(q, p, /*layer=*/0);
  k = rope(k, p, /*layer=*/0);
  Value a = causalAttention(q, k, v, /*layer=*/0, l);
  a = reshape(a, {B(), S(), h * dh}, l);
  return linear(a, p + "dense", config.outputBias);
}

Value ForwardBuilder::neoxMLP(Value x, const std::string &p) {
  Value f = linear(x, p + "dense_h_to_4h", true);
  f = activation(f, loc(p + "act"));
  return linear(f, p + "dense_4h_to_h", true);
}

Value ForwardBuilder::buildGPTNeoX() {
  Value ids = inputs[0], targets = inputs[1];
  Value h = EmbeddingOp::create(b, loc("gpt_neox.embed_in"),
                                param("gpt_neox.embed_in.weight"), ids);
  for (int64_t i = 0; i < config.numLayers; ++i) {
    std::string p = "gpt_neox.layers." + std::to_string(i) + ".";
    inLayer(i, [&] {
      Value a =
          neoxAttention(layerNorm(h, p + "input_layernorm"), p + "attention.");
      if (config.parallelResidual) {
        // GPTNeoXLayer: mlp(ln2(x)) + attn(ln1(x)) + x.
        Value m =
            neoxMLP(layerNorm(h, p + "post_attention_layernorm"), p + "mlp.");
        h = add(add(m, a, loc(p + "residual")), h, loc(p + "residual"));
        return;
      }
      h = add(a, h, loc(p + "residual"));
      Value m =
          neoxMLP(layerNorm(h, p + "post_attention_layernorm"), p + "mlp.");
      h = add(m, h, loc(p + "residual"));
    });
  }
  Value head = config.tieWordEmbeddings ? param("gpt_neox.embed_in.weight")
                                        : param("embed_out.weight");
  return outputOf(
      h, [&](Value x) { return layerNorm(x, "gpt_neox.final_layer_norm"); },
      head, "embed_out", targets);
}

} // namespace tgc::frontend
