//===- Pipelines.cpp - pass pipelines shared by tgc and tgc-opt -----------===//

#include "tgc/Pipelines/Pipelines.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Dialect/TG/Transforms/Remat.h"
#include "tgc/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void tgc::buildTrainingGraphPipeline(mlir::OpPassManager &pm,
                                     const TrainingGraphOptions &options) {
  if (options.loraRank > 0) {
    mlir::tg::TGLoraPassOptions lora;
    lora.rank = options.loraRank;
    lora.alpha = options.loraAlpha;
    lora.rslora = options.loraRslora;
    lora.targets.assign(options.loraTargets.begin(), options.loraTargets.end());
    lora.targetPattern = options.loraTargetPattern;
    lora.layers.assign(options.loraLayers.begin(), options.loraLayers.end());
    lora.layersPattern.assign(options.loraLayersPattern.begin(),
                              options.loraLayersPattern.end());
    lora.exclude.assign(options.loraExclude.begin(), options.loraExclude.end());
    lora.excludePattern = options.loraExcludePattern;
    lora.rankPatternKeys.assign(options.loraRankPatternKeys.begin(),
                                options.loraRankPatternKeys.end());
    lora.rankPatternRanks.assign(options.loraRankPatternRanks.begin(),
                                 options.loraRankPatternRanks.end());
    lora.alphaPatternKeys.assign(options.loraAlphaPatternKeys.begin(),
                                 options.loraAlphaPatternKeys.end());
    lora.alphaPatternAlphas.assign(options.loraAlphaPatternAlphas.begin(),
                                   options.loraAlphaPatternAlphas.end());
    pm.addPass(mlir::tg::createTGLoraPass(lora));
  }
  if (!options.freeze.empty()) {
    mlir::tg::TGFreezePassOptions freeze;
    freeze.pattern = options.freeze;
    pm.addPass(mlir::tg::createTGFreezePass(freeze));
  }
  if (options.frozenDtype != mlir::tg::LowPrecisionType::None) {
    mlir::tg::TGNarrowFrozenPassOptions narrow;
    narrow.elementType = options.frozenDtype;
    pm.addPass(mlir::tg::createTGNarrowFrozenPass(narrow));
  }
  // Fused ops bring their own gradient rules: before autodiff.
  if (options.fusion != mlir::tg::FusionMode::None)
    pm.addPass(mlir::tg::createTGFusePass());
  // On the forward graph, so the products' gradient rules see the casts.
  mlir::tg::LowPrecisionType lowElementType =
      mlir::tg::lowPrecisionType(options.precision);
  if (options.precision != mlir::tg::Precision::FP32) {
    mlir::tg::TGMixedPrecisionPassOptions mixed;
    mixed.elementType = lowElementType;
    pm.addPass(mlir::tg::createTGMixedPrecisionPass(mixed));
  }
  bool lossScaling = options.withOptimizer &&
                     options.lossScaling != mlir::tg::LossScaling::None;
  mlir::tg::TGAutodiffPassOptions autodiff;
  autodiff.lossScale = lossScaling;
  pm.addPass(mlir::tg::createTGAutodiffPass(autodiff));
  // Folding the seed and the reverse graph's reshapes, and sharing common
  // subexpressions, before the optimizer reads the gradients.
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  if (options.microBatches != 1) {
    mlir::tg::TGAccumulateGradientsPassOptions accumulate;
    accumulate.microBatches = options.microBatches;
    pm.addPass(mlir::tg::createTGAccumulateGradientsPass(accumulate));
  }
  if (options.dataParallel) {
    mlir::tg::TGDataParallelPassOptions dataParallel;
    dataParallel.bucketBytes = options.dpBucketBytes;
    pm.addPass(mlir::tg::createTGDataParallelPass(dataParallel));
  }
  if (options.withOptimizer) {
    mlir::tg::TGOptimizerPassOptions opt;
    opt.optimizer = options.optimizer;
    opt.beta1 = options.beta1;
    opt.beta2 = options.beta2;
    opt.eps = options.eps;
    opt.weightDecay = options.weightDecay;
    opt.momentum = options.momentum;
    opt.gradClip = options.gradClip;
    opt.returnGradients = options.returnGradients;
    opt.lossScaling = options.lossScaling;
    opt.lossScaleGrowthInterval = options.lossScaleGrowthInterval;
    opt.guardUpdates = options.guardUpdates;
    pm.addPass(mlir::tg::createTGOptimizerPass(opt));
    if (options.dataParallel && options.zeroProcesses > 0) {
      mlir::tg::TGShardOptimizerPassOptions zero;
      zero.processes = options.zeroProcesses;
      pm.addPass(mlir::tg::createTGShardOptimizerPass(zero));
    }
  }
  // The optimizer inside the backward sweep: before remat, so that its
  // planner sees gradients die one by one, and again after it (below), past
  // the readers of parameters that remat recomputes.
  bool scheduleUpdates = options.withOptimizer && options.optimizerInBackward;
  if (scheduleUpdates)
    pm.addPass(mlir::tg::createTGScheduleUpdatesPass());
  // Last on the tg graph: CSE would merge recomputed clones back. Runs with
  // policy none too, for the ops users annotated with tg.remat.
  mlir::tg::TGRematPassOptions remat;
  remat.policy = options.remat;
  remat.memoryBudget = options.memoryBudget;
  remat.report = options.rematReport;
  remat.fusedRecompute = options.fusion != mlir::tg::FusionMode::None;
  remat.gatheredParameters = options.withOptimizer && options.dataParallel &&
                             options.zeroProcesses > 0 &&
                             options.shardParameters;
  bool lowPrecisionSaves = options.precision != mlir::tg::Precision::FP32 &&
                           options.lowPrecisionSaves;
  if (lowPrecisionSaves)
    remat.savedElementType = lowElementType;
  pm.addPass(mlir::tg::createTGRematPass(remat));
  // What remat keeps, kept in the low type: after remat, so recomputed ops
  // read the kept copies too.
  if (lowPrecisionSaves) {
    mlir::tg::TGLowPrecisionSavesPassOptions saves;
    saves.elementType = lowElementType;
    pm.addPass(mlir::tg::createTGLowPrecisionSavesPass(saves));
  }
  if (scheduleUpdates)
    pm.addPass(mlir::tg::createTGScheduleUpdatesPass());
  // Last: the collectives go where the final order of their readers puts
  // them.
  if (options.withOptimizer && options.dataParallel &&
      options.zeroProcesses > 0 && options.shardParameters) {
    if (options.microBatches != 1) {
      mlir::tg::TGShardAccumulatedGradientsPassOptions accumulated;
      accumulated.microBatches = options.microBatches;
      pm.addPass(mlir::tg::createTGShardAccumulatedGradientsPass(accumulated));
    }
    mlir::tg::TGShardParametersPassOptions zero3;
    zero3.prefetch = options.gatherPrefetch;
    zero3.gatherBandwidth = options.gatherBandwidth;
    zero3.computeRate = options.computeRate;
    pm.addPass(mlir::tg::createTGShardParametersPass(zero3));
    // A budget in bytes for the planned peak: later runs read the weights
    // an earlier gather brought while the plan fits it (a fraction is of
    // remat's own plan and leaves the gathers as they are).
    if (!options.memoryBudget.empty()) {
      llvm::Expected<mlir::tg::MemoryBudget> budget =
          mlir::tg::parseMemoryBudget(options.memoryBudget);
      if (!budget) {
        llvm::consumeError(budget.takeError()); // tg-remat reports it
      } else if (budget->bytes >= 0) {
        mlir::tg::TGKeepGatheredParametersPassOptions keep;
        keep.budget = budget->bytes;
        pm.addPass(mlir::tg::createTGKeepGatheredParametersPass(keep));
      }
    }
  }
}

/// tg → linalg on tensors for every function left in the module.
static void addTGToLinalg(mlir::OpPassManager &pm, mlir::tg::FusionMode fusion,
                          tgc::TilingHook chooseTiles) {
  if (chooseTiles)
    chooseTiles(pm);
  // With fusion, each optimizer update one loop.
  mlir::tg::ConvertTGToLinalgPassOptions lowering;
  lowering.fuseUpdates = fusion != mlir::tg::FusionMode::None;
  pm.addPass(mlir::tg::createConvertTGToLinalgPass(lowering));
  // No CSE on tensors: it would merge tg-remat's recomputed clones back into
  // the forward ops (after bufferization CSE cannot: the ops write memory).
  pm.addPass(mlir::createCanonicalizerPass());
  if (fusion != mlir::tg::FusionMode::None) {
    pm.addPass(mlir::tg::createTGCFuseElementwisePass());
    pm.addPass(mlir::createCanonicalizerPass());
  }
}

void tgc::buildTGToLinalgPipeline(mlir::OpPassManager &pm,
                                  llvm::StringRef function,
                                  mlir::tg::FusionMode fusion,
                                  TilingHook chooseTiles) {
  // Only the compiled function survives (the forward function is dropped).
  pm.addPass(mlir::createSymbolPrivatizePass({function.str()}));
  pm.addPass(mlir::createSymbolDCEPass());
  addTGToLinalg(pm, fusion, chooseTiles);
}

void tgc::buildGenerationToLinalgPipeline(mlir::OpPassManager &pm,
                                          mlir::tg::FusionMode fusion,
                                          TilingHook chooseTiles) {
  pm.addPass(mlir::createSymbolPrivatizePass());
  addTGToLinalg(pm, fusion, chooseTiles);
}

void tgc::buildBufferizePipeline(
    mlir::OpPassManager &pm,
    llvm::function_ref<void(mlir::OpPassManager &)> buildTargetSchedule,
    bool dropArgumentResults) {
  using namespace mlir;
  // No linalg-fuse-elementwise-ops here: its reshape-propagation patterns
  // rewrite the named matmuls (fed through reshapes) into higher-rank generic
  // contractions that a matmul schedule no longer recognises.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // A loop's result computed into a fresh tensor and inserted into a slice
  // (attention's tasks write their rows of the output) is computed into the
  // slice itself.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The copies of those slices into themselves (their views now one value).
  pm.addPass(createCanonicalizerPass());
  if (dropArgumentResults)
    pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  pm.addPass(mlir::tg::createTGCDistinctResultsPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  buildTargetSchedule(pm);
  // Intermediates live in one static arena.
  pm.addPass(mlir::tg::createTGCPlanBuffersPass());
}

void tgc::registerPipelines() {
  mlir::PassPipelineRegistration<TrainingGraphOptions>(
      "tgc-training-graph",
      "Reverse graph and optimizer update: @forward → @train_step",
      buildTrainingGraphPipeline);
}
