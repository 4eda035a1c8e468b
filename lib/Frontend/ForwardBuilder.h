//===- ForwardBuilder.h - the tg forward graph of a model file -*- C++ -*-===//
//
// One builder per model family, each following the reference implementation
// in transformers (LlamaForCausalLM, also for Mistral, Qwen2, Qwen3, Phi-3,
// Gemma 1-3 and OLMo-2, with the expert blocks of Mixtral, Qwen-MoE and
// OLMoE; GPT2LMHeadModel; GPTNeoXForCausalLM) op for op, so that parameter
// names, shapes and numerics match a PyTorch run of the same model. What
// every family shares is in MLIRGen.cpp, each family in its own file.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_LIB_FRONTEND_FORWARDBUILDER_H
#define TGC_LIB_FRONTEND_FORWARDBUILDER_H

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Frontend/MLIRGen.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace tgc::frontend {

using namespace mlir;
using namespace mlir::tg;

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

  OwningOpRef<ModuleOp> build();

  /// The generation program: one function per step kind (a prompt chunk,
  /// one token), each
  ///   (params..., input_ids [1, S], positions [1, S], caches...)
  ///     -> (logits [1, V], updated caches...)
  /// with each layer's key and value cache [1, cacheLength, Hkv, head_dim]
  /// named `past_key_values.<layer>.key` / `.value` (`tg.state`).
  OwningOpRef<ModuleOp> buildGeneration(int64_t cacheLength,
                                        ArrayRef<GenerationStep> steps);

private:
  /// The family's parameters, in Hugging Face state-dict order.
  void declareParams();

  /// The family's graph: the loss in training, the logits in generation.
  Value buildModel();

  int64_t B() const { return generation ? 1 : config.training.batchSize; }
  int64_t S() const;

  RankedTensorType tensor(ArrayRef<int64_t> shape);

  /// A name location for ops of one HF module, fused with the model file.
  Location loc(StringRef name);

  void declareParam(const std::string &name, ArrayRef<int64_t> shape);

  /// A linear layer's `[out, in]` weight and, with `bias`, its `[out]` bias.
  void declareProjection(const std::string &prefix, int64_t out, int64_t in,
                         bool bias);

  void declareInputs(ArrayRef<StringRef> names, ArrayRef<int64_t> shape);

  Value param(const std::string &name);
  Value optionalParam(const std::string &name);

  Value activation(Value x, Location l);

  Value reshape(Value x, ArrayRef<int64_t> shape, Location l);

  Value add(Value x, Value y, Location l) { return AddOp::create(b, l, x, y); }

  /// Runs `build` and tags the ops it created with `tg.layer = index`.
  void inLayer(int64_t index, llvm::function_ref<void()> build);

  Value linear(Value x, const std::string &prefix, bool bias);

  /// The model's output from the final hidden states `h`: training's mean
  /// loss against `targets`; generation's logits of the last position
  /// ([B, V], before any final soft cap: the sampler applies it).
  Value outputOf(Value h, function_ref<Value(Value)> finalNorm, Value head,
                 StringRef headName, Value targets);

  /// The mean loss of `logits`, soft-capped where the family caps them.
  Value crossEntropy(Value logits, Value targets,
                     std::optional<int64_t> ignore);

  //===--------------------------------------------------------------------===//
  // Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma, OLMo-2 (LlamaForCausalLM
  // and its kin)
  //===--------------------------------------------------------------------===//

  void declareLlamaParams();

  Value rmsNorm(Value x, const std::string &prefix);

  Value llamaAttention(Value x, const std::string &p, int64_t layer);

  /// RoPE of `x` ([B, S, H, head_dim]) in layer `layer`; scaled variants
  /// list their frequencies, partial ones the dimensions they rotate.
  /// Gemma 3's sliding layers use their own base and no scaling.
  Value rope(Value x, const std::string &p, int64_t layer);

  /// Causal attention of layer `layer`: its window (where it hides a key),
  /// the family's score scale and soft cap.
  Value causalAttention(Value q, Value k, Value v, int64_t layer, Location l);

  Value llamaMLP(Value x, const std::string &p);

  Value buildLlama();

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
  ExpertNames expertNames(const std::string &p) const;

  /// In Hugging Face's module order: the router, each expert, the shared
  /// expert and its gate.
  void declareExperts(const std::string &p);

  /// Every expert's weight `proj`, in expert order.
  SmallVector<Value> expertWeights(const ExpertNames &n,
                                   const std::string &proj);

  /// The expert block on `x` ([B, S, D]). The router's probabilities pick
  /// top_k experts per token; the (token, expert) pairs are grouped by
  /// expert, each expert's MLP runs on its own rows, and each token sums its
  /// experts' outputs times their routing weights.
  Value expertBlock(Value x, const std::string &p);

  /// The sums over the experts' layers of Hugging Face's
  /// load_balancing_loss_func: each expert's probability summed over the
  /// tokens, and how often it was chosen.
  Value balanceProbabilities, balanceCounts, auxLoss;
  int64_t balanceLayers = 0;

  void addBalanceStatistics(Value logits, Value experts, Location l);

  /// loss + coef · E · Σ_e (counts_e / R) · (probabilities_e / R) over the
  /// R = layers · tokens rows of the routers (Hugging Face adds it so when
  /// output_router_logits is set).
  Value withBalanceLoss(Value loss);

  /// Layer `layer`'s feed-forward block: the experts where it has them.
  Value feedForward(Value x, const std::string &p, int64_t layer);

  //===--------------------------------------------------------------------===//
  // GPT-2 (GPT2LMHeadModel). Conv1D weights are [in, out]: x @ W + b.
  //===--------------------------------------------------------------------===//

  void declareGPT2Params();

  Value conv1d(Value x, const std::string &prefix);

  Value layerNorm(Value x, const std::string &prefix);

  Value gpt2Attention(Value x, const std::string &p);

  Value buildGPT2();

  //===--------------------------------------------------------------------===//
  // GPT-NeoX (GPTNeoXForCausalLM: Pythia)
  //===--------------------------------------------------------------------===//

  void declareGPTNeoXParams();

  Value neoxAttention(Value x, const std::string &p);

  Value neoxMLP(Value x, const std::string &p);

  Value buildGPTNeoX();

  //===--------------------------------------------------------------------===//
  // MLP classifier
  //===--------------------------------------------------------------------===//

  void declareMLPParams();

  Value buildMLP();

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

} // namespace tgc::frontend

#endif // TGC_LIB_FRONTEND_FORWARDBUILDER_H
