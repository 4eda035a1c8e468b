//===- Pipelines.cpp - pass pipelines shared by tgc and tgc-opt -----------===//

#include "tgc/Pipelines/Pipelines.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void tgc::buildTrainingGraphPipeline(mlir::OpPassManager &pm,
                                     const TrainingGraphOptions &options) {
  pm.addPass(mlir::tg::createTGAutodiffPass());
  // Folding the seed and the reverse graph's reshapes, and sharing common
  // subexpressions, before the optimizer reads the gradients.
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  if (!options.withOptimizer)
    return;
  mlir::tg::TGOptimizerPassOptions opt;
  opt.optimizer = options.optimizer;
  opt.beta1 = options.beta1;
  opt.beta2 = options.beta2;
  opt.eps = options.eps;
  opt.weightDecay = options.weightDecay;
  opt.momentum = options.momentum;
  opt.gradClip = options.gradClip;
  pm.addPass(mlir::tg::createTGOptimizerPass(opt));
}

void tgc::registerPipelines() {
  mlir::PassPipelineRegistration<TrainingGraphOptions>(
      "tgc-training-graph",
      "Reverse graph and optimizer update: @forward → @train_step",
      buildTrainingGraphPipeline);
}
