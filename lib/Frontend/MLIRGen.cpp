//===- MLIRGen.cpp - model configuration → tg forward graph ---------------===//
//
// One builder per model family, each following the reference implementation
// in transformers (LlamaForCausalLM, also for Mistral, Qwen2, Qwen3, Phi-3,
// Gemma 1-3 and OLMo-2; GPT2LMHeadModel; GPTNeoXForCausalLM) op for op, so that
// parameter names, shapes and numerics match a PyTorch run of the same model.
//
//===----------------------------------------------------------------------===//

#include "tgc/Frontend/MLIRGen.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::tg;
using namespace tgc;

namespace {

class ForwardBuilder {
public:
  ForwardBuilder(MLIRContext &context, const ModelConfig &config)
      : config(config), b(&context),
        fileLoc(FileLineColLoc::get(&context, config.path, 1, 1)) {
    switch (config.training.dtype) {
    case DType::F32:
      floatType = b.getF32Type();
      break;
    case DType::BF16:
      floatType = b.getBF16Type();
      break;
    case DType::F16:
      floatType = b.getF16Type();
      break;
    }
    idType = b.getI32Type();
  }

  OwningOpRef<ModuleOp> build() {
    module = ModuleOp::create(fileLoc);
    declareParams();
    if (config.family == ModelFamily::MLP) {
      argTypes.push_back(tensor({B(), config.layerSizes.front()}));
      argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          TGDialect::kInputAttrName, b.getStringAttr("features"))));
      argTypes.push_back(RankedTensorType::get({B()}, idType));
      argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          TGDialect::kInputAttrName, b.getStringAttr("labels"))));
    } else {
      declareInputs({"input_ids", "targets"}, {B(), S()});
    }

    b.setInsertionPointToEnd(module->getBody());
    auto lossType = RankedTensorType::get({}, floatType);
    auto func = func::FuncOp::create(b, fileLoc, kForwardFuncName,
                                     b.getFunctionType(argTypes, {lossType}));
    func.setAllArgAttrs(argAttrs);
    Block *entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);
    for (auto [name, index] : paramIndex)
      params[name] = entry->getArgument(index);
    size_t numParams = paramIndex.size();
    inputs.assign(entry->args_begin() + numParams, entry->args_end());

    SmallVector<Value> results{buildModel()};
    // The load-balancing loss is also reported on its own.
    if (auxLoss) {
      results.push_back(auxLoss);
      func.setFunctionType(
          b.getFunctionType(argTypes, ValueRange(results).getTypes()));
      func.setResultAttr(1, TGDialect::kOutputAttrName,
                         b.getStringAttr("aux_loss"));
    }
    func::ReturnOp::create(b, loc("loss"), results);
    return std::move(module);
  }

  /// The generation program: one function per step kind (a prompt chunk,
  /// one token), each
  ///   (params..., input_ids [1, S], positions [1, S], caches...)
  ///     -> (logits [1, V], updated caches...)
  /// with each layer's key and value cache [1, cacheLength, Hkv, head_dim]
  /// named `past_key_values.<layer>.key` / `.value` (`tg.state`).
  OwningOpRef<ModuleOp> buildGeneration(int64_t cacheLength,
                                        ArrayRef<GenerationStep> steps) {
    assert(config.family != ModelFamily::MLP &&
           "generation needs a language model");
    module = ModuleOp::create(fileLoc);
    declareParams();
    size_t numParams = argTypes.size();
    for (const GenerationStep &step : steps) {
      argTypes.resize(numParams);
      argAttrs.resize(numParams);
      generation = Generation{step.tokens, cacheLength, Value(), {}, {}};
      declareInputs({"input_ids", "positions"}, {B(), S()});
      auto cacheType =
          tensor({B(), cacheLength, config.numKVHeads, config.headDim});
      SmallVector<Type> resultTypes{
          RankedTensorType::get({B(), config.vocabSize}, floatType)};
      SmallVector<Attribute> resultAttrs{b.getDictionaryAttr(b.getNamedAttr(
          TGDialect::kOutputAttrName, b.getStringAttr("logits")))};
      for (int64_t i = 0; i < config.numLayers; ++i)
        for (const char *kind : {"key", "value"}) {
          auto name = b.getDictionaryAttr(b.getNamedAttr(
              TGDialect::kStateAttrName,
              b.getStringAttr("past_key_values." + std::to_string(i) + "." +
                              kind)));
          argTypes.push_back(cacheType);
          argAttrs.push_back(name);
          resultTypes.push_back(cacheType);
          resultAttrs.push_back(name);
        }
      b.setInsertionPointToEnd(module->getBody());
      auto func = func::FuncOp::create(
          b, fileLoc, step.name, b.getFunctionType(argTypes, resultTypes));
      func.setAllArgAttrs(argAttrs);
      func.setAllResultAttrs(resultAttrs);
      Block *entry = func.addEntryBlock();
      b.setInsertionPointToStart(entry);
      params.clear();
      for (auto [name, index] : paramIndex)
        params[name] = entry->getArgument(index);
      inputs.assign(entry->args_begin() + numParams,
                    entry->args_begin() + numParams + 2);
      generation->positions = inputs[1];
      generation->caches.assign(entry->args_begin() + numParams + 2,
                                entry->args_end());
      generation->updated = generation->caches;
      SmallVector<Value> results{buildModel()};
      results.append(generation->updated.begin(), generation->updated.end());
      func::ReturnOp::create(b, loc("logits"), results);
    }
    generation.reset();
    return std::move(module);
  }

private:
  /// The family's parameters, in Hugging Face state-dict order.
  void declareParams() {
    switch (config.family) {
    case ModelFamily::Llama:
      return declareLlamaParams();
    case ModelFamily::GPT2:
      return declareGPT2Params();
    case ModelFamily::GPTNeoX:
      return declareGPTNeoXParams();
    case ModelFamily::MLP:
      return declareMLPParams();
    }
  }

  /// The family's graph: the loss in training, the logits in generation.
  Value buildModel() {
    switch (config.family) {
    case ModelFamily::Llama:
      return buildLlama();
    case ModelFamily::GPT2:
      return buildGPT2();
    case ModelFamily::GPTNeoX:
      return buildGPTNeoX();
    case ModelFamily::MLP:
      return buildMLP();
    }
    llvm_unreachable("unknown model family");
  }

  int64_t B() const { return generation ? 1 : config.training.batchSize; }
  int64_t S() const {
    return generation ? generation->tokens : config.seqLen();
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, floatType);
  }

  /// A name location for ops of one HF module, fused with the model file.
  Location loc(StringRef name) {
    return NameLoc::get(b.getStringAttr(name), fileLoc);
  }

  void declareParam(const std::string &name, ArrayRef<int64_t> shape) {
    paramIndex.emplace_back(name, argTypes.size());
    argTypes.push_back(tensor(shape));
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(TGDialect::kParamAttrName, b.getStringAttr(name))));
  }

  /// A linear layer's `[out, in]` weight and, with `bias`, its `[out]` bias.
  void declareProjection(const std::string &prefix, int64_t out, int64_t in,
                         bool bias) {
    declareParam(prefix + ".weight", {out, in});
    if (bias)
      declareParam(prefix + ".bias", {out});
  }

  void declareInputs(ArrayRef<StringRef> names, ArrayRef<int64_t> shape) {
    for (StringRef name : names) {
      argTypes.push_back(RankedTensorType::get(shape, idType));
      argAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(TGDialect::kInputAttrName, b.getStringAttr(name))));
    }
  }

  Value param(const std::string &name) {
    auto it = params.find(name);
    assert(it != params.end() && "parameter declared before use");
    return it->second;
  }
  Value optionalParam(const std::string &name) {
    auto it = params.find(name);
    return it == params.end() ? Value() : it->second;
  }

  Value activation(Value x, Location l) {
    switch (config.activation) {
    case Activation::ReLU:
      return ReluOp::create(b, l, x);
    case Activation::GeluErf:
      return GeluOp::create(b, l, x, b.getStringAttr("none"));
    case Activation::GeluTanh:
      return GeluOp::create(b, l, x, b.getStringAttr("tanh"));
    case Activation::SiLU:
      return SiluOp::create(b, l, x);
    }
    llvm_unreachable("unknown activation");
  }

  Value reshape(Value x, ArrayRef<int64_t> shape, Location l) {
    auto type = llvm::cast<RankedTensorType>(x.getType());
    return ReshapeOp::create(b, l, type.clone(shape), x);
  }

  Value add(Value x, Value y, Location l) { return AddOp::create(b, l, x, y); }

  /// Runs `build` and tags the ops it created with `tg.layer = index`.
  void inLayer(int64_t index, llvm::function_ref<void()> build) {
    currentLayer = index;
    Block *block = b.getInsertionBlock();
    Operation *last = block->empty() ? nullptr : &block->back();
    build();
    auto first = last ? std::next(last->getIterator()) : block->begin();
    for (Operation &op : llvm::make_range(first, block->end()))
      op.setAttr(TGDialect::kLayerAttrName, b.getI64IntegerAttr(index));
  }

  Value linear(Value x, const std::string &prefix, bool bias) {
    return LinearOp::create(b, loc(prefix), x, param(prefix + ".weight"),
                            bias ? param(prefix + ".bias") : Value());
  }

  /// The model's output from the final hidden states `h`: training's mean
  /// loss against `targets`; generation's logits of the last position
  /// ([B, V], before any final soft cap: the sampler applies it).
  Value outputOf(Value h, function_ref<Value(Value)> finalNorm, Value head,
                 StringRef headName, Value targets) {
    if (!generation) {
      Value logits =
          LinearOp::create(b, loc(headName), finalNorm(h), head, Value());
      return crossEntropy(logits, targets, /*ignore=*/-100);
    }
    Value last = SliceOp::create(b, loc(headName), h, /*axis=*/1, S() - 1, 1);
    Value logits =
        LinearOp::create(b, loc(headName), finalNorm(last), head, Value());
    return reshape(logits, {B(), config.vocabSize}, loc(headName));
  }

  /// The mean loss of `logits`, soft-capped where the family caps them.
  Value crossEntropy(Value logits, Value targets,
                     std::optional<int64_t> ignore) {
    return CrossEntropyOp::create(
        b, loc("loss"), logits, targets,
        ignore ? b.getI64IntegerAttr(*ignore) : IntegerAttr(),
        config.logitSoftcap ? b.getF64FloatAttr(*config.logitSoftcap)
                            : FloatAttr());
  }

  //===--------------------------------------------------------------------===//
  // Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma, OLMo-2 (LlamaForCausalLM
  // and its kin)
  //===--------------------------------------------------------------------===//

  void declareLlamaParams() {
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

  Value rmsNorm(Value x, const std::string &prefix) {
    Value weight = param(prefix + ".weight");
    if (config.gemmaScaling) {
      // GemmaRMSNorm scales by (1 + weight).
      auto type = llvm::cast<RankedTensorType>(weight.getType());
      Value one = ConstantOp::create(
          b, loc(prefix),
          DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(),
                                                      1.0)));
      weight = AddOp::create(b, loc(prefix), weight, one);
    }
    return RMSNormOp::create(b, loc(prefix), x, weight,
                             b.getF64FloatAttr(config.normEps));
  }

  Value llamaAttention(Value x, const std::string &p, int64_t layer) {
    int64_t hq = config.numHeads, hkv = config.numKVHeads, dh = config.headDim;
    Value q, k, v;
    if (config.fusedProjections) {
      // Phi-3's qkv_proj: the q rows, then k's, then v's.
      Value qkv = linear(x, p + "qkv_proj", false);
      Location fused = loc(p + "qkv_proj");
      q = SliceOp::create(b, fused, qkv, /*axis=*/2, 0, hq * dh);
      k = SliceOp::create(b, fused, qkv, /*axis=*/2, hq * dh, hkv * dh);
      v = SliceOp::create(b, fused, qkv, /*axis=*/2, (hq + hkv) * dh,
                          hkv * dh);
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

  /// RoPE of `x` ([B, S, H, head_dim]) in layer `layer`; scaled variants
  /// list their frequencies, partial ones the dimensions they rotate.
  /// Gemma 3's sliding layers use their own base and no scaling.
  Value rope(Value x, const std::string &p, int64_t layer) {
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
        generation ? b.getI64IntegerAttr(generation->cacheLength)
                   : IntegerAttr();
    return RopeOp::create(b, loc(p + "rotary_emb"), x,
                          b.getF64FloatAttr(theta), frequencies, UnitAttr(),
                          rotated, positions, maxPosition);
  }

  /// Causal attention of layer `layer`: its window (where it hides a key),
  /// the family's score scale and soft cap.
  Value causalAttention(Value q, Value k, Value v, int64_t layer,
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
      kc = CacheUpdateOp::create(b, l, generation->caches[2 * currentLayer],
                                 k, positions);
      vc = CacheUpdateOp::create(
          b, l, generation->caches[2 * currentLayer + 1], v, positions);
      return AttentionOp::create(b, l, q, kc, vc, /*causal=*/true, scale,
                                 window, softcap, positions)
          .getResult();
    }
    return AttentionOp::create(b, l, q, k, v, /*causal=*/true, scale, window,
                               softcap, /*positions=*/Value())
        .getResult();
  }

  Value llamaMLP(Value x, const std::string &p) {
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

  //===--------------------------------------------------------------------===//
  // Expert blocks (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE): dropless top-k
  // routing, each expert's gated MLP on exactly the rows routed to it.
  //===--------------------------------------------------------------------===//

  /// The block's prefix and its experts' gate / up / down projection names.
  struct ExpertNames {
    std::string block, gate, up, down;
    std::string expert(int64_t j, const std::string &proj) const {
      return block + "experts." + std::to_string(j) + "." + proj;
    }
  };
  ExpertNames expertNames(const std::string &p) const {
    if (config.moe.mixtralNames)
      return {p + "block_sparse_moe.", "w1", "w3", "w2"};
    return {p + "mlp.", "gate_proj", "up_proj", "down_proj"};
  }

  /// In Hugging Face's module order: the router, each expert, the shared
  /// expert and its gate.
  void declareExperts(const std::string &p) {
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

  /// Every expert's weight `proj`, in expert order.
  SmallVector<Value> expertWeights(const ExpertNames &n,
                                   const std::string &proj) {
    SmallVector<Value> weights;
    for (int64_t j = 0; j < config.moe.numExperts; ++j)
      weights.push_back(param(n.expert(j, proj) + ".weight"));
    return weights;
  }

  /// The expert block on `x` ([B, S, D]). The router's probabilities pick
  /// top_k experts per token; the (token, expert) pairs are grouped by
  /// expert, each expert's MLP runs on its own rows, and each token sums its
  /// experts' outputs times their routing weights.
  Value expertBlock(Value x, const std::string &p) {
    const MoEConfig &m = config.moe;
    int64_t d = config.hiddenSize, tokens = B() * S(), k = m.topK;
    ExpertNames n = expertNames(p);
    Location l = loc(n.block.substr(0, n.block.size() - 1));
    Location expertsLoc = loc(n.block + "experts");
    Value rowsIn = reshape(x, {tokens, d}, l);
    Value logits = linear(rowsIn, n.block + "gate", false);
    auto route = RouteOp::create(
        b, loc(n.block + "gate"),
        tensor({tokens, k}).clone(floatType.isF64() ? floatType
                                                    : b.getF32Type()),
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
    Value grouped = EmbeddingOp::create(b, expertsLoc, rowsIn,
                                        dispatch.getRows());
    auto product = [&](Value in, const std::string &proj, int64_t out) {
      return GroupedMatmulOp::create(b, expertsLoc,
                                     tensor({tokens * k, out}), in, offsets,
                                     expertWeights(n, proj),
                                     /*transpose_weights=*/true);
    };
    Value gate = product(grouped, n.gate, m.expertSize);
    Value up = product(grouped, n.up, m.expertSize);
    Value act = MulOp::create(b, expertsLoc, activation(gate, expertsLoc), up);
    Value down = product(act, n.down, d);
    // Back in token order: [T, k, D], weighted, summed over the k experts.
    Value perToken = EmbeddingOp::create(b, l, down, dispatch.getPositions());
    Value weighted = MulOp::create(b, l, perToken,
                                   reshape(weights, {tokens, k, 1}, l));
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

  /// The sums over the experts' layers of Hugging Face's
  /// load_balancing_loss_func: each expert's probability summed over the
  /// tokens, and how often it was chosen.
  Value balanceProbabilities, balanceCounts, auxLoss;
  int64_t balanceLayers = 0;

  void addBalanceStatistics(Value logits, Value experts, Location l) {
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

  /// loss + coef · E · Σ_e (counts_e / R) · (probabilities_e / R) over the
  /// R = layers · tokens rows of the routers (Hugging Face adds it so when
  /// output_router_logits is set).
  Value withBalanceLoss(Value loss) {
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
    return add(loss,
               ScaleOp::create(b, l, auxLoss,
                               b.getF64FloatAttr(config.moe.auxLossCoef)),
               l);
  }

  /// Layer `layer`'s feed-forward block: the experts where it has them.
  Value feedForward(Value x, const std::string &p, int64_t layer) {
    return config.moe.sparseLayer(layer) ? expertBlock(x, p)
                                         : llamaMLP(x, p + "mlp.");
  }

  Value buildLlama() {
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

  //===--------------------------------------------------------------------===//
  // GPT-2 (GPT2LMHeadModel). Conv1D weights are [in, out]: x @ W + b.
  //===--------------------------------------------------------------------===//

  void declareGPT2Params() {
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

  Value conv1d(Value x, const std::string &prefix) {
    Location l = loc(prefix);
    Value y = MatmulOp::create(b, l, x, param(prefix + ".weight"));
    return add(y, param(prefix + ".bias"), l);
  }

  Value layerNorm(Value x, const std::string &prefix) {
    return LayerNormOp::create(b, loc(prefix), x, param(prefix + ".weight"),
                               param(prefix + ".bias"),
                               b.getF64FloatAttr(config.normEps));
  }

  Value gpt2Attention(Value x, const std::string &p) {
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

  Value buildGPT2() {
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

  //===--------------------------------------------------------------------===//
  // GPT-NeoX (GPTNeoXForCausalLM: Pythia)
  //===--------------------------------------------------------------------===//

  void declareGPTNeoXParams() {
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

  Value neoxAttention(Value x, const std::string &p) {
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

  Value neoxMLP(Value x, const std::string &p) {
    Value f = linear(x, p + "dense_h_to_4h", true);
    f = activation(f, loc(p + "act"));
    return linear(f, p + "dense_4h_to_h", true);
  }

  Value buildGPTNeoX() {
    Value ids = inputs[0], targets = inputs[1];
    Value h = EmbeddingOp::create(b, loc("gpt_neox.embed_in"),
                                  param("gpt_neox.embed_in.weight"), ids);
    for (int64_t i = 0; i < config.numLayers; ++i) {
      std::string p = "gpt_neox.layers." + std::to_string(i) + ".";
      inLayer(i, [&] {
        Value a = neoxAttention(layerNorm(h, p + "input_layernorm"),
                                p + "attention.");
        if (config.parallelResidual) {
          // GPTNeoXLayer: mlp(ln2(x)) + attn(ln1(x)) + x.
          Value m = neoxMLP(layerNorm(h, p + "post_attention_layernorm"),
                            p + "mlp.");
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

  //===--------------------------------------------------------------------===//
  // MLP classifier
  //===--------------------------------------------------------------------===//

  void declareMLPParams() {
    const auto &sizes = config.layerSizes;
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      std::string p = "layers." + std::to_string(i);
      declareParam(p + ".weight", {sizes[i + 1], sizes[i]});
      if (config.bias)
        declareParam(p + ".bias", {sizes[i + 1]});
    }
  }

  Value buildMLP() {
    Value x = inputs[0], labels = inputs[1];
    size_t numLayers = config.layerSizes.size() - 1;
    for (size_t i = 0; i < numLayers; ++i) {
      std::string p = "layers." + std::to_string(i);
      inLayer(i, [&] {
        x = linear(x, p, config.bias);
        if (i + 1 < numLayers)
          x = activation(x, loc(p + ".act"));
      });
    }
    return crossEntropy(x, labels, std::nullopt);
  }

  /// Generation: the step being built (its token count), the cache length,
  /// the step's positions input and each layer's key and value caches (the
  /// arguments, then the updated values).
  struct Generation {
    int64_t tokens = 0, cacheLength = 0;
    Value positions;
    SmallVector<Value> caches, updated;
  };
  std::optional<Generation> generation;
  int64_t currentLayer = 0;

  const ModelConfig &config;
  OpBuilder b;
  Location fileLoc;
  Type floatType, idType;
  OwningOpRef<ModuleOp> module;
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  std::vector<std::pair<std::string, unsigned>> paramIndex;
  llvm::StringMap<Value> params;
  SmallVector<Value> inputs;
};

} // namespace

OwningOpRef<ModuleOp> tgc::buildForwardModule(MLIRContext &context,
                                              const ModelConfig &config) {
  context.loadDialect<TGDialect, func::FuncDialect>();
  return ForwardBuilder(context, config).build();
}

OwningOpRef<ModuleOp>
tgc::buildGenerationModule(MLIRContext &context, const ModelConfig &config,
                           int64_t cacheLength,
                           ArrayRef<GenerationStep> steps) {
  context.loadDialect<TGDialect, func::FuncDialect>();
  return ForwardBuilder(context, config).buildGeneration(cacheLength, steps);
}
