//===- TrainingFlags.cpp - command-line overrides of "training" -----------===//
//
// Each flag mirrors a key of the model file's "training" object; a flag that
// is given wins. Flags belong to every subcommand.
//
//===----------------------------------------------------------------------===//

#include "tgc/Driver/TrainingFlags.h"

#include "tgc/Dialect/TG/Transforms/Lora.h"
#include "tgc/Dialect/TG/Transforms/Remat.h"
#include "tgc/Support/NamePattern.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace tgc;
namespace cl = llvm::cl;

namespace {
cl::OptionCategory trainingCategory("Training flags (override the model file's "
                                    "\"training\" object)");

template <typename T> struct Flag : cl::opt<T> {
  Flag(llvm::StringRef name, llvm::StringRef desc, llvm::StringRef valueDesc)
      : cl::opt<T>(name, cl::desc(desc), cl::value_desc(valueDesc),
                   cl::cat(trainingCategory),
                   cl::sub(cl::SubCommand::getAll())) {}
  bool given() const { return this->getNumOccurrences() > 0; }
};

Flag<int64_t> batchSize("batch-size", "Sequences (or samples) per step", "n");
Flag<int64_t> seqLen("seq-len", "Tokens per sequence", "n");
cl::opt<OptimizerKind, false, EnumFlagParser<OptimizerKind>>
    optimizer("optimizer", cl::desc("Optimizer"), cl::cat(trainingCategory),
              cl::sub(cl::SubCommand::getAll()), TG_OPTIMIZER_KIND_CL_VALUES);
Flag<double> lr("lr", "Learning rate", "x");
Flag<double> beta1("beta1", "AdamW beta1", "x");
Flag<double> beta2("beta2", "AdamW beta2", "x");
Flag<double> eps("eps", "AdamW epsilon", "x");
Flag<double> weightDecay("weight-decay", "Decoupled weight decay (AdamW)", "x");
Flag<double> momentum("momentum", "SGD momentum", "x");
Flag<double> gradClip("grad-clip",
                      "Clip gradients to this global L2 norm (0: off)", "x");
cl::opt<DType, false, EnumFlagParser<DType>>
    dtype("dtype", cl::desc("Element type of weights and activations"),
          cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()),
          cl::values(clEnumValN(DType::F32, "f32", "32-bit float"),
                     clEnumValN(DType::BF16, "bf16", "bfloat16"),
                     clEnumValN(DType::F16, "f16", "16-bit float")));
cl::opt<Precision, false, EnumFlagParser<Precision>>
    precision("precision",
              cl::desc("Arithmetic precision (docs/mixed-precision.md; "
                       "default: fp32)"),
              cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()),
              TG_PRECISION_CL_VALUES);
Flag<uint64_t> seed("seed", "Random seed for weight init and data order", "n");
Flag<int64_t> steps("steps", "Training steps", "n");
cl::opt<RematPolicy, false, EnumFlagParser<RematPolicy>>
    remat("remat", cl::desc("Rematerialisation (default: none)"),
          cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()),
          TG_REMAT_POLICY_CL_VALUES);
cl::opt<FusionMode, false, EnumFlagParser<FusionMode>>
    fusion("fusion", cl::desc("Fusion (docs/fusion.md; default: default)"),
           cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()),
           TG_FUSION_MODE_CL_VALUES);
cl::opt<bool> optimizerInBackward(
    "optimizer-in-backward",
    cl::desc("Update each parameter as soon as its gradient is complete, so "
             "gradients are not all alive at once (default: true; global-norm "
             "clipping waits for every gradient either way)"),
    cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()));
Flag<int64_t> gradAccum(
    "grad-accum",
    "Micro-batches of --batch-size rows per step, their gradients summed "
    "before the update: a step sees K x batch rows with the activation "
    "memory of one micro-batch",
    "K");
Flag<std::string>
    freeze("freeze",
           "Freeze the parameters whose whole Hugging Face name matches this "
           "regular expression (ECMAScript syntax, matched as Python's "
           "re.fullmatch): no gradient, no optimizer state, no update",
           "regex");
cl::opt<DType, false, EnumFlagParser<DType>> frozenDtype(
    "frozen-dtype",
    cl::desc("Element type of the frozen weight matrices (--freeze, "
             "--lora-r): f32 (default), or bf16/f16 at half the memory, their "
             "products on bf16/f16 operands accumulated in f32"),
    cl::values(clEnumValN(DType::F32, "f32", "as the other parameters"),
               clEnumValN(DType::BF16, "bf16", "bfloat16"),
               clEnumValN(DType::F16, "f16", "IEEE half")),
    cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()));
Flag<int64_t> loraRank(
    "lora-r",
    "Train LoRA adapters of rank r beside the target modules and freeze "
    "every other parameter (PEFT's LoraConfig; docs/lora.md)",
    "r");
Flag<double> loraAlpha("lora-alpha",
                       "LoRA alpha: the adapters' path is scaled by alpha / r "
                       "(default 8, as PEFT's)",
                       "alpha");
cl::list<std::string> loraTargets(
    "lora-targets",
    cl::desc("Modules to adapt, by name or name suffix as PEFT's "
             "target_modules (default: PEFT's for the family, e.g. "
             "q_proj,v_proj), or all-linear"),
    cl::value_desc("m1,m2,..."), cl::CommaSeparated,
    cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()));
cl::opt<bool> loraRslora(
    "lora-rslora",
    cl::desc("Scale the LoRA path by alpha / sqrt(r) (PEFT's use_rslora)"),
    cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()));
Flag<std::string> loraConfig(
    "lora-config",
    "Take the LoRA settings (r, lora_alpha, target_modules, rank_pattern, "
    "...) from a PEFT adapter_config.json; the other --lora flags override "
    "its keys",
    "file");
Flag<double> loraDropout("lora-dropout",
                         "LoRA dropout: only 0 (tgc trains without dropout)",
                         "p");
cl::opt<bool> auxLoss(
    "aux-loss",
    cl::desc("Mixture-of-experts models: add Hugging Face's load-balancing "
             "loss times router_aux_loss_coef to the loss (default: the "
             "config's output_router_logits)"),
    cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()));
Flag<int64_t> dpBucketKiB(
    "dp-bucket-kib",
    "With --data-parallel: gradients smaller than this many KiB share "
    "collectives, in buckets of at most this size (default 1024; 0: one "
    "collective per gradient)",
    "n");
cl::opt<bool> dataParallel(
    "data-parallel",
    cl::desc("Compile a step for data-parallel training under mpirun: each "
             "gradient is summed over the processes inside the step "
             "(docs/distributed.md)"),
    cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()));
Flag<int64_t> gatherPrefetch(
    "gather-prefetch",
    "With --zero=3: how many layers ahead every gather of parameters starts "
    "(each more keeps one more layer's weights in memory; default: planned, "
    "1 or 2 per gather, from --gather-bandwidth and --compute-rate)",
    "n");
Flag<double> gatherBandwidth(
    "gather-bandwidth",
    "With --zero=3: GB/s a process receives parameter gathers at, for the "
    "prefetch plan and its estimate in tgc stats (default 10)",
    "x");
Flag<double> computeRate(
    "compute-rate",
    "With --zero=3: GFLOP/s a process computes the step at, for the "
    "prefetch plan and its estimate in tgc stats (default: the target's "
    "estimate)",
    "x");
Flag<int64_t> zeroStage(
    "zero",
    "ZeRO stage: 1 shards the optimizer state over the processes of a "
    "data-parallel job, 3 the parameters too (both imply --data-parallel "
    "and need --processes), 0 keeps them whole (default)",
    "stage");
Flag<int64_t> processes(
    "processes",
    "With --zero: the number of processes (mpirun -np) the optimizer state "
    "(and with --zero=3 the parameters) is sharded over; the executable "
    "runs as exactly that many",
    "n");
Flag<std::string> lossScale(
    "loss-scale",
    "Loss scaling: dynamic (the default with --precision=fp16-mixed), none "
    "(the default otherwise), or a fixed scale such as 1024; steps whose "
    "scaled gradients overflow are skipped",
    "dynamic|none|x");
Flag<double> lossScaleInit("loss-scale-init",
                           "First scale of dynamic loss scaling (default "
                           "65536)",
                           "x");
Flag<int64_t> lossScaleGrowthInterval(
    "loss-scale-growth-interval",
    "Clean steps after which a dynamic loss scale doubles (default 2000)", "n");
cl::opt<bool> guardUpdate(
    "guard-update",
    cl::desc("Skip the updates of a step whose gradient norm is not finite, "
             "so training stops with the weights of the step before "
             "(default: on with --grad-clip or loss scaling, whose updates "
             "wait for the norm anyway; without clipping it keeps every "
             "gradient alive until the norm)"),
    cl::cat(trainingCategory), cl::sub(cl::SubCommand::getAll()));
Flag<std::string> memoryBudget(
    "memory-budget",
    "Budget for the planned peak of activations and temporaries: bytes "
    "(1.5GiB, 800MB) or a fraction of the planned peak of --remat=none "
    "(0.4, 40%); implies --remat=budget. With --zero=3, room left under a "
    "budget in bytes keeps gathered weights for the backward pass",
    "size");
cl::opt<bool> rematReport("remat-report",
                          cl::desc("Print every rematerialisation decision "
                                   "(value, bytes, FLOPs, why) to stderr"),
                          cl::cat(trainingCategory),
                          cl::sub(cl::SubCommand::getAll()));

/// Checks a flag that must be positive, if it was given.
llvm::Error checkPositive(const cl::Option &flag, double value) {
  if (!flag.getNumOccurrences() || value > 0)
    return llvm::Error::success();
  // %g: integer flags read as doubles print as given (0, not 0.000000).
  return llvm::createStringError(
      llvm::formatv("--{0} must be positive, got {1}", flag.ArgStr,
                    llvm::format("%g", value))
          .str());
}
} // namespace

llvm::cl::OptionCategory &tgc::trainingFlagsCategory() {
  return trainingCategory;
}

llvm::Error tgc::applyTrainingFlags(TrainingConfig &t) {
  if (batchSize.given())
    t.batchSize = batchSize;
  if (seqLen.given())
    t.seqLen = seqLen;
  if (optimizer.getNumOccurrences())
    t.optimizer = optimizer;
  if (lr.given())
    t.lr = lr;
  if (beta1.given())
    t.beta1 = beta1;
  if (beta2.given())
    t.beta2 = beta2;
  if (eps.given())
    t.eps = eps;
  if (weightDecay.given())
    t.weightDecay = weightDecay;
  if (momentum.given())
    t.momentum = momentum;
  if (gradClip.given())
    t.gradClip = gradClip;
  if (dtype.getNumOccurrences())
    t.dtype = dtype;
  if (precision.getNumOccurrences())
    t.precision = precision;
  if (seed.given())
    t.seed = seed;
  if (steps.given())
    t.steps = steps;
  if (remat.getNumOccurrences())
    t.remat = remat;
  if (memoryBudget.given()) {
    t.memoryBudget = memoryBudget;
    if (!remat.getNumOccurrences())
      t.remat = RematPolicy::Budget;
  }
  if (rematReport)
    t.rematReport = true;
  if (fusion.getNumOccurrences())
    t.fusion = fusion;
  if (optimizerInBackward.getNumOccurrences())
    t.optimizerInBackward = optimizerInBackward;
  if (dataParallel.getNumOccurrences())
    t.dataParallel = dataParallel;
  if (gradAccum.given())
    t.gradAccum = gradAccum;
  if (freeze.given()) {
    llvm::Expected<NamePattern> re = NamePattern::compile(freeze);
    if (!re)
      return llvm::createStringError("--freeze: " +
                                     llvm::toString(re.takeError()));
    t.freeze = freeze;
  }
  if (frozenDtype.getNumOccurrences())
    t.frozenDtype = frozenDtype;
  if (loraConfig.given()) {
    llvm::Expected<mlir::tg::LoraSettings> lora = loadLoraConfig(loraConfig);
    if (!lora)
      return llvm::createStringError("--lora-config: " +
                                     llvm::toString(lora.takeError()));
    t.lora = std::move(*lora);
  }
  if (loraRank.given()) {
    if (loraRank < 1)
      return llvm::createStringError(
          "--lora-r: expected a positive rank, got " +
          std::to_string(int64_t(loraRank)));
    t.lora.rank = loraRank;
  }
  if (loraAlpha.given()) {
    if (!(loraAlpha > 0) || !std::isfinite(double(loraAlpha)))
      return llvm::createStringError(
          llvm::formatv("--lora-alpha: expected a positive number, got {0}",
                        llvm::format("%g", double(loraAlpha)))
              .str());
    t.lora.alpha = loraAlpha;
  }
  if (loraTargets.getNumOccurrences()) {
    t.lora.targets.assign(loraTargets.begin(), loraTargets.end());
    t.lora.targetPattern.clear();
    if (llvm::is_contained(t.lora.targets, ""))
      return llvm::createStringError("--lora-targets: an empty module name");
  }
  if (loraRslora.getNumOccurrences())
    t.lora.rslora = loraRslora;
  if (loraDropout.given() && loraDropout != 0.0)
    return llvm::createStringError(
        llvm::formatv("--lora-dropout: {0} is not supported: tgc trains "
                      "without dropout",
                      llvm::format("%g", double(loraDropout)))
            .str());
  if (!t.lora.enabled() &&
      (loraAlpha.given() || loraTargets.getNumOccurrences() ||
       loraRslora.getNumOccurrences()))
    return llvm::createStringError(
        "--lora-alpha, --lora-targets and --lora-rslora set up LoRA "
        "adapters: give their rank with --lora-r (or --lora-config)");
  if (dpBucketKiB.given())
    t.dpBucketKiB = dpBucketKiB;
  if (zeroStage.given()) {
    t.zeroStage = zeroStage;
    if (zeroStage > 0)
      t.dataParallel = true;
  }
  if (processes.given())
    t.processes = processes;
  if (gatherPrefetch.given())
    t.gatherPrefetch = gatherPrefetch;
  if (gatherBandwidth.given())
    t.gatherBandwidth = gatherBandwidth;
  if (computeRate.given())
    t.computeRate = computeRate;
  if (lossScale.given()) {
    t.lossScale = mlir::tg::parseLossScaleSetting(lossScale);
    if (!t.lossScale)
      return llvm::createStringError(
          "--loss-scale: expected dynamic, none or a positive number, got '" +
          lossScale + "'");
  }
  if (lossScaleInit.given())
    t.lossScaleInit = lossScaleInit;
  if (lossScaleGrowthInterval.given())
    t.lossScaleGrowthInterval = lossScaleGrowthInterval;
  if (guardUpdate.getNumOccurrences())
    t.guardUpdate = guardUpdate;
  return llvm::Error::success();
}

llvm::Error tgc::checkRematFlags(const TrainingConfig &t) {
  if (t.remat == RematPolicy::Budget && t.memoryBudget.empty())
    return llvm::createStringError("--remat=budget needs --memory-budget=SIZE");
  if (!t.memoryBudget.empty()) {
    if (t.remat != RematPolicy::Budget)
      return llvm::createStringError(
          "--memory-budget needs --remat=budget, not "
          "--remat=" +
          stringifyRematPolicy(t.remat));
    llvm::Expected<mlir::tg::MemoryBudget> budget =
        mlir::tg::parseMemoryBudget(t.memoryBudget);
    if (!budget)
      return llvm::createStringError("--memory-budget: " +
                                     llvm::toString(budget.takeError()));
  }
  return llvm::Error::success();
}

llvm::Error tgc::applyTrainingFlags(ModelConfig &config) {
  using Check = std::pair<const cl::Option *, double>;
  for (auto [flag, value] :
       {Check(&batchSize, double(batchSize)), Check(&seqLen, double(seqLen)),
        Check(&gradAccum, double(gradAccum)), Check(&lr, lr), Check(&eps, eps)})
    if (llvm::Error err = checkPositive(*flag, value))
      return err;
  for (Flag<double> *flag : {&beta1, &beta2})
    if (flag->given() && (*flag < 0 || *flag >= 1))
      return llvm::createStringError(
          llvm::formatv("--{0} must be in [0, 1), got {1}", flag->ArgStr,
                        llvm::format("%g", double(*flag)))
              .str());
  if (dpBucketKiB.given() && dpBucketKiB < 0)
    return llvm::createStringError(
        "--dp-bucket-kib must be non-negative, got " +
        std::to_string(int64_t(dpBucketKiB)));
  if (zeroStage.given() && zeroStage != 0 && zeroStage != 1 && zeroStage != 3)
    return llvm::createStringError(
        "--zero: expected 0, 1 or 3 (ZeRO-1 shards the optimizer state, "
        "ZeRO-3 the parameters too; stage 2's saving comes with stage 1, "
        "docs/distributed.md), got " +
        std::to_string(int64_t(zeroStage)));
  std::string zeroFlag = "--zero=" + std::to_string(int64_t(zeroStage));
  if (gatherPrefetch.given() && (gatherPrefetch < 0 || zeroStage != 3))
    return llvm::createStringError(
        gatherPrefetch < 0
            ? "--gather-prefetch must be non-negative, got " +
                  std::to_string(int64_t(gatherPrefetch))
            : std::string("--gather-prefetch is the prefetch depth of "
                          "--zero=3's parameter gathers"));
  for (Flag<double> *flag : {&gatherBandwidth, &computeRate}) {
    if (!flag->given())
      continue;
    std::string name = "--" + flag->ArgStr.str();
    double value = flag->getValue();
    if (!(value > 0) || !std::isfinite(value))
      return llvm::createStringError(name + " must be a positive number, got " +
                                     llvm::formatv("{0}", value).str());
    if (zeroStage != 3)
      return llvm::createStringError(
          name + " informs the prefetch plan of --zero=3's parameter "
                 "gathers");
  }
  if (processes.given() && processes < 1)
    return llvm::createStringError("--processes must be positive, got " +
                                   std::to_string(int64_t(processes)));
  if (processes.given() && zeroStage < 1)
    return llvm::createStringError(
        "--processes is the process count of --zero=1 or --zero=3; without "
        "ZeRO the executable runs as any number of processes");
  if (zeroStage > 0 && !processes.given())
    return llvm::createStringError(
        zeroFlag + " shards over a number of processes fixed at compile "
        "time: give it with --processes=N (the -np of mpirun)");
  if (zeroStage > 0 && dataParallel.getNumOccurrences() && !dataParallel)
    return llvm::createStringError(
        zeroFlag + " is data parallelism: it cannot be combined with "
        "--data-parallel=false");
  for (Flag<double> *flag : {&weightDecay, &momentum, &gradClip})
    if (flag->given() && *flag < 0)
      return llvm::createStringError(
          llvm::formatv("--{0} must be non-negative, got {1}", flag->ArgStr,
                        llvm::format("%g", double(*flag)))
              .str());
  if (llvm::Error err = applyTrainingFlags(config.training))
    return err;
  if (auxLoss.getNumOccurrences()) {
    if (config.moe.sparseLayers.empty())
      return llvm::createStringError(
          "--aux-loss: " + config.path +
          " has no mixture-of-experts layer to balance");
    config.moe.auxLoss = auxLoss;
  }
  mlir::tg::LoraSettings &lora = config.training.lora;
  if (lora.enabled() && lora.targets.empty() && lora.targetPattern.empty()) {
    lora.targets = defaultLoraTargets(config.modelType);
    if (lora.targets.empty())
      return llvm::createStringError(
          config.path + ": LoRA has no default target modules for model type "
          "\"" + config.modelType + "\": name them with --lora-targets (or "
          "the training object's lora.target_modules)");
  }
  if (lora.enabled() && config.modelType == "gemma3_text") {
    // Gemma 3 scales its embeddings inside the embedding module, which
    // PEFT's lora.Embedding wraps: its path would skip the scale that tgc's
    // lookup is followed by.
    llvm::Expected<mlir::tg::LoraSelection> selection =
        mlir::tg::LoraSelection::compile(lora);
    if (!selection)
      return llvm::createStringError(config.path +
                                     ": --lora-* (training.lora): " +
                                     llvm::toString(selection.takeError()));
    if (selection->names("model.embed_tokens") &&
        !selection->excludes("model.embed_tokens"))
      return llvm::createStringError(
          config.path + ": LoRA on gemma3_text's model.embed_tokens is not "
                        "supported (Gemma 3 scales its embeddings inside the "
                        "module PEFT's adapter wraps)");
  }
  if (llvm::Error err = checkRematFlags(config.training))
    return err;
  return validateModelConfig(config);
}

void tgc::setTrainingGraphOptions(TrainingGraphOptions &options,
                                  const TrainingConfig &t) {
  options.optimizer = t.optimizer;
  options.beta1 = t.beta1;
  options.beta2 = t.beta2;
  options.eps = t.eps;
  options.weightDecay = t.weightDecay;
  options.momentum = t.momentum;
  options.gradClip = t.gradClip.value_or(0.0);
  options.remat = t.remat;
  options.memoryBudget = t.memoryBudget;
  options.rematReport = t.rematReport;
  options.fusion = t.fusion;
  options.precision = t.precision;
  options.optimizerInBackward = t.optimizerInBackward;
  options.dataParallel = t.dataParallel;
  options.dpBucketBytes = t.dpBucketKiB * 1024;
  options.zeroProcesses = t.zeroStage > 0 ? t.processes : 0;
  options.shardParameters = t.zeroStage == 3;
  options.gatherPrefetch = t.gatherPrefetch;
  options.gatherBandwidth = t.gatherBandwidth;
  if (t.computeRate > 0)
    options.computeRate = t.computeRate;
  options.lossScaling = t.lossScaling();
  options.lossScaleGrowthInterval = t.lossScaleGrowthInterval;
  options.guardUpdates = t.guardsUpdates();
  options.microBatches = t.gradAccum;
  options.freeze = t.freeze;
  options.frozenDtype =
      t.frozenDtype == DType::BF16  ? mlir::tg::LowPrecisionType::BF16
      : t.frozenDtype == DType::F16 ? mlir::tg::LowPrecisionType::F16
                                    : mlir::tg::LowPrecisionType::None;
  options.loraRank = t.lora.rank;
  options.loraAlpha = t.lora.alpha;
  options.loraRslora = t.lora.rslora;
  options.loraTargets = t.lora.targets;
  options.loraTargetPattern = t.lora.targetPattern;
  options.loraLayers = t.lora.layers;
  options.loraLayersPattern = t.lora.layersPattern;
  options.loraExclude = t.lora.exclude;
  options.loraExcludePattern = t.lora.excludePattern;
  for (auto &[key, r] : t.lora.rankPattern) {
    options.loraRankPatternKeys.push_back(key);
    options.loraRankPatternRanks.push_back(r);
  }
  for (auto &[key, a] : t.lora.alphaPattern) {
    options.loraAlphaPatternKeys.push_back(key);
    options.loraAlphaPatternAlphas.push_back(a);
  }
}
