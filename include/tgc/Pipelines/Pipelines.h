//===- Pipelines.h - pass pipelines shared by tgc and tgc-opt ---*- C++ -*-===//
//
// Each pipeline has an options struct and one build function, used both by
// the driver and, through its registration, by `tgc-opt`, so a lit test of
// `tgc-opt --tgc-training-graph` runs exactly what `tgc --emit=grad` runs.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_PIPELINES_PIPELINES_H
#define TGC_PIPELINES_PIPELINES_H

#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace tgc {

/// @forward → @train_step with the optimizer update (frozen parameters,
/// fusion, autodiff, cleanup, optimizer, rematerialisation).
struct TrainingGraphOptions
    : public mlir::PassPipelineOptions<TrainingGraphOptions> {
  Option<mlir::tg::OptimizerKind> optimizer{
      *this, "optimizer", llvm::cl::desc("The optimizer"),
      llvm::cl::init(mlir::tg::OptimizerKind::AdamW),
      TG_OPTIMIZER_KIND_CL_VALUES};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW β1"),
                       llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW β2"),
                       llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW ε"),
                     llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("Weight decay"),
                             llvm::cl::init(0.0)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<double> gradClip{*this, "grad-clip",
                          llvm::cl::desc("Global-norm clipping (0: off)"),
                          llvm::cl::init(0.0)};
  Option<int64_t> loraRank{
      *this, "lora-rank",
      llvm::cl::desc("LoRA adapters of this rank (tg-lora; 0: none)"),
      llvm::cl::init(0)};
  Option<double> loraAlpha{*this, "lora-alpha",
                           llvm::cl::desc("LoRA alpha (scale alpha / r)"),
                           llvm::cl::init(8.0)};
  Option<bool> loraRslora{*this, "lora-rslora",
                          llvm::cl::desc("LoRA scale alpha / sqrt(r)"),
                          llvm::cl::init(false)};
  ListOption<std::string> loraTargets{
      *this, "lora-targets",
      llvm::cl::desc("Modules LoRA adapts (names or suffixes, all-linear)")};
  Option<std::string> loraTargetPattern{
      *this, "lora-target-pattern",
      llvm::cl::desc("Modules LoRA adapts: a regular expression of whole "
                     "names instead of lora-targets"),
      llvm::cl::init("")};
  ListOption<int64_t> loraLayers{
      *this, "lora-layers",
      llvm::cl::desc("LoRA's list targets in these layers only")};
  ListOption<std::string> loraLayersPattern{
      *this, "lora-layers-pattern",
      llvm::cl::desc("Module lists whose index is the layer")};
  ListOption<std::string> loraExclude{
      *this, "lora-exclude",
      llvm::cl::desc("Modules LoRA leaves out (names or suffixes)")};
  Option<std::string> loraExcludePattern{
      *this, "lora-exclude-pattern",
      llvm::cl::desc("Modules LoRA leaves out (a regular expression)"),
      llvm::cl::init("")};
  ListOption<std::string> loraRankPatternKeys{
      *this, "lora-rank-pattern-keys",
      llvm::cl::desc("rank_pattern's keys (tg-lora)")};
  ListOption<int64_t> loraRankPatternRanks{
      *this, "lora-rank-pattern-ranks",
      llvm::cl::desc("rank_pattern's ranks (tg-lora)")};
  ListOption<std::string> loraAlphaPatternKeys{
      *this, "lora-alpha-pattern-keys",
      llvm::cl::desc("alpha_pattern's keys (tg-lora)")};
  ListOption<double> loraAlphaPatternAlphas{
      *this, "lora-alpha-pattern-alphas",
      llvm::cl::desc("alpha_pattern's alphas (tg-lora)")};
  Option<std::string> freeze{
      *this, "freeze",
      llvm::cl::desc("Freeze the parameters whose whole name matches this "
                     "regular expression (tg-freeze)"),
      llvm::cl::init("")};
  Option<mlir::tg::LowPrecisionType> frozenDtype{
      *this, "frozen-dtype",
      llvm::cl::desc("Keep frozen weight matrices in this type "
                     "(tg-narrow-frozen; none: f32)"),
      llvm::cl::init(mlir::tg::LowPrecisionType::None),
      TG_LOW_PRECISION_TYPE_CL_VALUES};
  Option<bool> returnGradients{
      *this, "return-gradients",
      llvm::cl::desc("Also return the gradients from the train step"),
      llvm::cl::init(false)};
  Option<mlir::tg::RematPolicy> remat{
      *this, "remat", llvm::cl::desc("Rematerialisation policy"),
      llvm::cl::init(mlir::tg::RematPolicy::None), TG_REMAT_POLICY_CL_VALUES};
  Option<std::string> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Budget of --remat=budget (bytes, 1.5GiB, or a fraction)"),
      llvm::cl::init("")};
  Option<bool> rematReport{*this, "remat-report",
                           llvm::cl::desc("Print every remat decision"),
                           llvm::cl::init(false)};
  Option<mlir::tg::FusionMode> fusion{
      *this, "fusion", llvm::cl::desc("Fusions before autodiff"),
      llvm::cl::init(mlir::tg::FusionMode::Default), TG_FUSION_MODE_CL_VALUES};
  Option<mlir::tg::Precision> precision{
      *this, "precision",
      llvm::cl::desc("Arithmetic precision (tg-mixed-precision)"),
      llvm::cl::init(mlir::tg::Precision::FP32), TG_PRECISION_CL_VALUES};
  Option<bool> lowPrecisionSaves{
      *this, "low-precision-saves",
      llvm::cl::desc("With mixed precision, keep the saved activations in "
                     "the low type (tg-low-precision-saves)"),
      llvm::cl::init(true)};
  Option<bool> optimizerInBackward{
      *this, "optimizer-in-backward",
      llvm::cl::desc("Each parameter's update right after its gradient "
                     "(tg-schedule-updates)"),
      llvm::cl::init(true)};
  Option<int64_t> microBatches{
      *this, "micro-batches",
      llvm::cl::desc("Gradient accumulation: micro-batches per step "
                     "(tg-accumulate-gradients)"),
      llvm::cl::init(1)};
  Option<bool> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Sum the gradients over processes (tg-data-parallel)"),
      llvm::cl::init(false)};
  Option<int64_t> dpBucketBytes{
      *this, "dp-bucket-bytes",
      llvm::cl::desc("Gradients smaller than this share collectives"),
      llvm::cl::init(1 << 20)};
  Option<int64_t> zeroProcesses{
      *this, "zero-processes",
      llvm::cl::desc("ZeRO-1: shard the optimizer state over this many "
                     "processes (tg-shard-optimizer; 0: off)"),
      llvm::cl::init(0)};
  Option<bool> shardParameters{
      *this, "shard-parameters",
      llvm::cl::desc("ZeRO-3: with zero-processes, shard the parameters too "
                     "(tg-shard-parameters)"),
      llvm::cl::init(false)};
  Option<int64_t> gatherPrefetch{
      *this, "gather-prefetch",
      llvm::cl::desc("ZeRO-3: parameter gathers started this many runs "
                     "ahead; -1: planned (tg-shard-parameters)"),
      llvm::cl::init(-1)};
  Option<double> gatherBandwidth{
      *this, "gather-bandwidth",
      llvm::cl::desc("ZeRO-3's planned prefetch: GB/s a process receives "
                     "gathers at"),
      llvm::cl::init(10.0)};
  Option<double> computeRate{
      *this, "compute-rate",
      llvm::cl::desc("ZeRO-3's planned prefetch: GFLOP/s a process "
                     "computes the step at"),
      llvm::cl::init(50.0)};
  Option<mlir::tg::LossScaling> lossScaling{
      *this, "loss-scaling",
      llvm::cl::desc("none, static or dynamic loss scaling (tg-autodiff's "
                     "loss_scale seed, unscaled and checked by tg-optimizer)"),
      llvm::cl::init(mlir::tg::LossScaling::None), TG_LOSS_SCALING_CL_VALUES};
  Option<int64_t> lossScaleGrowthInterval{
      *this, "loss-scale-growth-interval",
      llvm::cl::desc("Clean steps before a dynamic loss scale doubles"),
      llvm::cl::init(2000)};
  Option<bool> guardUpdates{
      *this, "guard-updates",
      llvm::cl::desc("Skip every update of a step whose gradient norm is not "
                     "finite (tg-optimizer; loss scaling always does)"),
      llvm::cl::init(false)};
  Option<bool> withOptimizer{
      *this, "with-optimizer",
      llvm::cl::desc("Append the optimizer update (off: gradients only)"),
      llvm::cl::init(true)};
};

void buildTrainingGraphPipeline(mlir::OpPassManager &pm,
                                const TrainingGraphOptions &options);

/// The target's choice of tiles for the neutral ops (`tg.tiling`), added
/// right before convert-tg-to-linalg (TargetBackend::buildTilingPipeline).
using TilingHook = llvm::function_ref<void(mlir::OpPassManager &)>;

/// Up to linalg on tensors (the --emit=linalg level): only `function`
/// survives, `chooseTiles` sets the target's tiles, tg → linalg,
/// canonicalised; with `fusion` other than none, chains of elementwise ops
/// fused (tgc-fuse-elementwise) and each optimizer update one loop.
void buildTGToLinalgPipeline(
    mlir::OpPassManager &pm, llvm::StringRef function,
    mlir::tg::FusionMode fusion = mlir::tg::FusionMode::Default,
    TilingHook chooseTiles = {});

/// The same lowering for a generation program (@prefill, @decode): every
/// function is kept, made private so that bufferization may drop the
/// results that are their arguments (the KV caches, updated in place).
void buildGenerationToLinalgPipeline(
    mlir::OpPassManager &pm,
    mlir::tg::FusionMode fusion = mlir::tg::FusionMode::Default,
    TilingHook chooseTiles = {});

/// Linalg on tensors → bufferized step (results become out-parameters) with
/// intermediates planned into one static arena (`tgc.arena_bytes`).
/// `buildTargetSchedule` adds the target's schedule (e.g. the CPU matmul
/// tiling), which runs on the bufferized IR before the planner so that the
/// buffers it introduces are planned too. Shared by every backend. With
/// `dropArgumentResults`, results that are (updated in place) arguments of
/// a private function are dropped instead of copied to out-parameters.
void buildBufferizePipeline(
    mlir::OpPassManager &pm,
    llvm::function_ref<void(mlir::OpPassManager &)> buildTargetSchedule,
    bool dropArgumentResults = false);

/// Registers the target-neutral pipelines with the global registry (each
/// backend registers its own).
void registerPipelines();

} // namespace tgc

#endif // TGC_PIPELINES_PIPELINES_H
