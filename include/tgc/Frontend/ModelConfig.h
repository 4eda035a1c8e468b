//===- ModelConfig.h - model description files ------------------*- C++ -*-===//
//
// A model description file (JSON) read into a typed configuration: a Hugging
// Face config.json (the llama-like families, gpt2, gpt_neox), or a tgc MLP
// description, plus an optional "training" object. See docs/model-format.md.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_FRONTEND_MODELCONFIG_H
#define TGC_FRONTEND_MODELCONFIG_H

#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tgc {

enum class ModelFamily { Llama, GPT2, GPTNeoX, MLP };

/// Activation functions, spelled as in HF configs / torch.
enum class Activation { ReLU, GeluErf, GeluTanh, SiLU };

enum class QKNorm { None, PerHead, Projection };

llvm::StringRef stringifyActivation(Activation act);

using mlir::tg::FusionMode;
using mlir::tg::LossScaleSetting;
using mlir::tg::LossScaling;
using mlir::tg::OptimizerKind;
using mlir::tg::Precision;
using mlir::tg::RematPolicy;

enum class DType { F32, BF16, F16 };

/// The RoPE variants of transformers' ROPE_INIT_FUNCTIONS that tgc builds:
/// plain, linear position interpolation, and Llama 3's frequency-dependent
/// scaling (rope_scaling / rope_parameters "rope_type").
enum class RopeScalingKind { None, Linear, Llama3 };

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::None;
  double factor = 1.0;
  // llama3 only.
  double lowFreqFactor = 1.0;
  double highFreqFactor = 4.0;
  int64_t originalMaxPositions = 0;
};

/// Size in bytes of one element of `dtype`.
unsigned dtypeBytes(DType dtype);
llvm::StringRef stringifyDType(DType dtype);

/// Settings of the training step. Every field has a default; the "training"
/// object of the model file and then the command line override them.
struct TrainingConfig {
  int64_t batchSize = 8;
  /// Sequence length; 0 means "the model's maximum position count".
  int64_t seqLen = 0;
  OptimizerKind optimizer = OptimizerKind::AdamW;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.0;
  double momentum = 0.0;
  /// Global-norm gradient clipping threshold; nullopt disables clipping.
  std::optional<double> gradClip;
  DType dtype = DType::F32;
  /// fp32, or bf16-mixed (needs dtype f32: the parameters are the masters).
  Precision precision = Precision::FP32;
  uint64_t seed = 0;
  int64_t steps = 100;
  /// Rematerialisation (tg-remat): policy, budget text (parsed by
  /// tg-remat; checked by the flags), and whether to report every decision.
  RematPolicy remat = RematPolicy::None;
  /// tg-fuse before autodiff.
  FusionMode fusion = FusionMode::Default;
  std::string memoryBudget;
  bool rematReport = false;
  /// tg-schedule-updates: each parameter's update right after its gradient.
  bool optimizerInBackward = true;
  /// tg-data-parallel: gradients summed over the processes of an MPI job.
  bool dataParallel = false;
  /// Gradients smaller than this share collectives (KiB; 0: none do).
  int64_t dpBucketKiB = 1024;
  /// ZeRO stage: 0, or 1 (tg-shard-optimizer: optimizer state sharded over
  /// `processes` processes, a number fixed at compile time).
  int64_t zeroStage = 0;
  int64_t processes = 0;
  /// --zero=3: runs of parameter readers each gather starts ahead; -1:
  /// planned from the gather bandwidth (GB/s) and the compute rate
  /// (GFLOP/s a process; 0: the target's estimate).
  int64_t gatherPrefetch = -1;
  double gatherBandwidth = 10.0;
  double computeRate = 0.0;
  /// tg-accumulate-gradients: micro-batches of batchSize rows per step.
  int64_t gradAccum = 1;
  /// tg-freeze: parameters whose whole Hugging Face name matches this
  /// regular expression (tgc::NamePattern) are frozen; empty: none.
  std::string freeze;
  /// tg-lora: adapters beside the targeted linear layers, everything else
  /// frozen. Targets left empty take PEFT's default for the family.
  mlir::tg::LoraSettings lora;
  /// tg-narrow-frozen: frozen weight matrices stored in bf16 or f16 (f32:
  /// as the rest).
  DType frozenDtype = DType::F32;
  /// Loss scaling as given (unset: dynamic for fp16-mixed, none otherwise).
  /// A dynamic scale starts at lossScaleInit and doubles after
  /// lossScaleGrowthInterval clean steps.
  std::optional<LossScaleSetting> lossScale;
  double lossScaleInit = 65536.0;
  int64_t lossScaleGrowthInterval = 2000;

  /// Whether a step whose gradient norm is not finite skips its updates
  /// (the runtime then stops with the previous step's weights). Unset: on
  /// where the updates wait for the global norm anyway (clipping, loss
  /// scaling); loss scaling always guards.
  std::optional<bool> guardUpdate;
  bool guardsUpdates() const {
    return lossScaling() != LossScaling::None ||
           guardUpdate.value_or(gradClip.value_or(0.0) > 0.0);
  }

  LossScaling lossScaling() const {
    if (!lossScale)
      return precision == Precision::FP16Mixed ? LossScaling::Dynamic
                                               : LossScaling::None;
    return lossScale->kind;
  }
  /// The scale of the first step (a static scale's value).
  double initialLossScale() const {
    return lossScaling() == LossScaling::Static ? lossScale->scale
                                                : lossScaleInit;
  }
};

/// The expert blocks of the mixture-of-experts decoders (mixtral,
/// qwen2_moe, qwen3_moe, olmoe): a router picks top_k of num_experts gated
/// MLPs for each token (docs/moe.md).
struct MoEConfig {
  int64_t numExperts = 0;
  int64_t topK = 0;
  /// Each expert's hidden width (moe_intermediate_size; Mixtral's and
  /// OLMoE's intermediate_size).
  int64_t expertSize = 0;
  /// Divide the chosen weights by their sum (norm_topk_prob; Mixtral
  /// always does).
  bool normalizeTopK = false;
  /// Qwen2-MoE's shared expert: its width (0: none), gated by a sigmoid.
  int64_t sharedExpertSize = 0;
  /// Which layers have the expert block; the others keep a dense MLP of
  /// intermediate_size (Qwen's decoder_sparse_step and mlp_only_layers).
  /// Empty: no experts anywhere.
  std::vector<bool> sparseLayers;
  /// Mixtral's module names: block_sparse_moe, experts.N.w1 / w3 / w2.
  bool mixtralNames = false;
  /// Hugging Face's load-balancing loss (output_router_logits), added to
  /// the loss times router_aux_loss_coef.
  bool auxLoss = false;
  double auxLossCoef = 0.001;

  bool sparseLayer(int64_t layer) const {
    return layer < static_cast<int64_t>(sparseLayers.size()) &&
           sparseLayers[layer];
  }
  /// Parameters of the experts a token does not use: (E − k) gated MLPs of
  /// each expert layer of width `hidden`.
  int64_t idleExpertParameters(int64_t hidden) const {
    int64_t layers = llvm::count(sparseLayers, true);
    return layers * (numExperts - topK) * 3 * hidden * expertSize;
  }
};

struct ModelConfig {
  std::string path;      // the file it came from, for messages
  /// As written: "llama", "mistral", "qwen2", "qwen3", "phi3", "gemma",
  /// "olmo2", "mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "gpt2",
  /// "gpt_neox", "mlp".
  std::string modelType;
  /// Llama covers the decoders built like LlamaForCausalLM (llama, mistral,
  /// qwen2, qwen3); their differences are the fields below.
  ModelFamily family = ModelFamily::Llama;

  // Transformers (llama and gpt2).
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t intermediateSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKVHeads = 0;
  int64_t headDim = 0;
  int64_t maxPositions = 0;
  double normEps = 1e-6;
  double ropeTheta = 10000.0;
  RopeScaling ropeScaling;
  /// The leading dimensions of each head RoPE rotates (GPT-NeoX's
  /// rotary_pct, Phi's partial_rotary_factor); 0: the whole head.
  int64_t rotaryDims = 0;
  int64_t rotatedDims() const { return rotaryDims ? rotaryDims : headDim; }
  bool tieWordEmbeddings = false;
  bool qkvBias = false;    // biases on q/k/v_proj (llama's attention_bias, qwen2)
  bool outputBias = false; // bias on o_proj (llama's attention_bias)
  bool mlpBias = false;    // llama's mlp_bias
  /// RMSNorms of the queries and keys before RoPE: Qwen3's per head
  /// (q_norm, k_norm of size head_dim), OLMo-2's over the whole projection
  /// (of size heads · head_dim).
  QKNorm qkNorm = QKNorm::None;
  /// OLMo-2 normalises each block's output before its residual add
  /// (post_attention_layernorm, post_feedforward_layernorm) and has no
  /// input norms.
  bool postNorms = false;
  /// GPT-NeoX's use_parallel_residual: x + attn(ln1(x)) + mlp(ln2(x)).
  bool parallelResidual = false;
  /// Phi-3 stores q/k/v as one qkv_proj and gate/up as one gate_up_proj
  /// (the graph slices them, the state dict keeps them fused).
  bool fusedProjections = false;
  /// Gemma: the embeddings times sqrt(hidden_size), and RMSNorms that scale
  /// by (1 + weight).
  bool gemmaScaling = false;
  /// Gemma 2 and 3 normalise each block's input and output
  /// (input_layernorm, post_attention_layernorm; pre_feedforward_layernorm,
  /// post_feedforward_layernorm).
  bool sandwichNorms = false;
  /// The attention's score scale in place of 1/sqrt(head_dim) (Gemma's
  /// query_pre_attn_scalar^-1/2).
  std::optional<double> attentionScale;
  /// Soft caps c · tanh(x / c): of the attention scores
  /// (attn_logit_softcapping) and of the logits (final_logit_softcapping).
  std::optional<double> attentionSoftcap, logitSoftcap;
  /// Gemma 3: the RoPE base of the sliding layers (rope_local_base_freq),
  /// which use no RoPE scaling.
  std::optional<double> localRopeTheta;
  Activation activation = Activation::SiLU;
  /// Mistral's (and Phi-3's) sliding_window: query i attends to keys
  /// i - W < j <= i.
  std::optional<int64_t> slidingWindow;
  /// The layers slidingWindow applies to (Qwen windows some layers only);
  /// empty: every layer.
  std::vector<bool> windowedLayers;
  /// The window of layer `layer`'s attention where it hides a key at the
  /// sequence length: none where W >= seq_len.
  std::optional<int64_t> attentionWindow(int64_t layer) const;
  /// Whether layer `layer` is a sliding-window layer (whatever seq_len).
  bool slidingLayer(int64_t layer) const;

  MoEConfig moe;

  // MLP.
  std::vector<int64_t> layerSizes;
  bool bias = true;

  TrainingConfig training;

  /// Sequence length actually used (training.seqLen or maxPositions).
  int64_t seqLen() const {
    return training.seqLen ? training.seqLen : maxPositions;
  }
};

/// The inverse frequency of each of the rotated RoPE pairs, as
/// transformers' rope init function for `config`'s variant computes it (in
/// f64).
std::vector<double> ropeInverseFrequencies(const ModelConfig &config);

/// Reads and validates a model description. Errors name the file, the key
/// and the problem (with line:col for JSON syntax errors).
llvm::Expected<ModelConfig> loadModelConfig(llvm::StringRef path);

/// Same, from text already in memory; `path` is only used in messages.
llvm::Expected<ModelConfig> parseModelConfig(llvm::StringRef text,
                                             llvm::StringRef path);

/// Deepest array/object nesting accepted in JSON read by tgc.
constexpr unsigned kMaxJSONDepth = 256;

/// Refuses JSON text nested deeper than `maxDepth` arrays/objects, before a
/// recursive parser (llvm::json::parse) would run out of stack on it: the
/// error reads "PATH:LINE:COL: JSON nesting deeper than N levels". Brackets
/// inside string literals do not count. Call it before llvm::json::parse on
/// any text tgc did not write itself.
llvm::Error checkJSONNesting(llvm::StringRef text, llvm::StringRef path,
                             unsigned maxDepth = kMaxJSONDepth);

/// Validates `config` once command-line overrides are applied (e.g. a
/// sequence length beyond the model's positions, or past its sliding window);
/// callers of loadModelConfig call it after applying their flags.
llvm::Error validateModelConfig(const ModelConfig &config);

/// The LoRA settings of a PEFT adapter_config.json at `path` (`tgc
/// --lora-config`), read as the training object's "lora" is.
llvm::Expected<mlir::tg::LoraSettings> loadLoraConfig(llvm::StringRef path);

/// PEFT's default LoRA target modules for a model type (empty where PEFT
/// has none: the targets must then be given).
std::vector<std::string> defaultLoraTargets(llvm::StringRef modelType);

/// Checks the loss-scaling settings of `training` (from `path`).
llvm::Error checkLossScale(const TrainingConfig &training,
                           llvm::StringRef path);

} // namespace tgc

#endif // TGC_FRONTEND_MODELCONFIG_H
