//===- Pipelines.cpp - pass pipelines shared by tgc and tgc-opt -----------===//

#include "tgc/Pipelines/Pipelines.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void tgc::buildTrainingGraphPipeline(mlir::OpPassManager &pm,
                                     const TrainingGraphOptions &options) {
  pm.addPass(mlir::tg::createTGAutodiffPass());
  // Folding the seed and the reverse graph's reshapes, and sharing common
  // subexpressions, before the optimizer reads the gradients.
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
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
    pm.addPass(mlir::tg::createTGOptimizerPass(opt));
  }
  // Last on the tg graph: CSE would merge recomputed clones back. Runs with
  // policy none too, for the ops users annotated with tg.remat.
  mlir::tg::TGRematPassOptions remat;
  remat.policy = options.remat;
  remat.memoryBudget = options.memoryBudget;
  remat.report = options.rematReport;
  pm.addPass(mlir::tg::createTGRematPass(remat));
}

void tgc::buildTGToLinalgPipeline(mlir::OpPassManager &pm,
                                  const CPULoweringOptions &options) {
  // Only the compiled function survives (the forward function is dropped).
  pm.addPass(mlir::createSymbolPrivatizePass({options.function}));
  pm.addPass(mlir::createSymbolDCEPass());
  pm.addPass(mlir::tg::createConvertTGToLinalgPass());
  // No CSE on tensors: it would merge tg-remat's recomputed clones back into
  // the forward ops (after bufferization CSE cannot: the ops write memory).
  pm.addPass(mlir::createCanonicalizerPass());
}

void tgc::buildBufferizePipeline(mlir::OpPassManager &pm,
                                 const CPULoweringOptions &options) {
  using namespace mlir;
  // No linalg-fuse-elementwise-ops here: its reshape-propagation patterns
  // rewrite the named matmuls (fed through reshapes) into higher-rank generic
  // contractions that the matmul schedule cannot vectorise.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  // Matmuls of any shape: parallel output tiles, K and register tiles
  // sized for the target CPU, vector FMAs; the rest: loops. Before
  // the arena: hoisting the accumulators out of the reduction loop needs
  // buffers that are visibly distinct allocations.
  mlir::tg::TGCVectorizeMatmulsPassOptions matmuls;
  matmuls.vectorBits = options.vectorBits;
  matmuls.vectorRegisters = options.vectorRegisters;
  matmuls.l1CacheBytes = options.l1CacheBytes;
  matmuls.l2CacheBytes = options.l2CacheBytes;
  matmuls.tiles = options.matmulTiles;
  pm.addPass(mlir::tg::createTGCVectorizeMatmulsPass(matmuls));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Large elementwise and reduction ops: parallel chunks too.
  pm.addPass(mlir::tg::createTGCParallelizeLoopsPass());
  pm.addPass(createForallToParallelLoopPass());
  // Intermediates live in one static arena; what remains (buffers inside
  // loops) is freed by the deallocation pipeline.
  pm.addPass(mlir::tg::createTGCPlanBuffersPass());
}

void tgc::buildLinalgToLLVMPipeline(mlir::OpPassManager &pm,
                                    const CPULoweringOptions &options) {
  using namespace mlir;
  buildBufferizePipeline(pm, options);
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createCanonicalizerPass());
  VectorTransferToSCFOptions vectorToSCF;
  vectorToSCF.enableFullUnroll(true);
  pm.addPass(createConvertVectorToSCFPass(vectorToSCF));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Arithmetic instead of scalar libm calls: the loops vectorise.
  pm.addPass(mlir::tg::createTGCExpandMathPass());
  // One function per loop nest keeps LLVM's loop passes linear.
  pm.addPass(mlir::tg::createTGCOutlineLoopNestsPass());
  // The matmuls' output tiles (scf.parallel) run on OpenMP threads
  // (OMP_NUM_THREADS).
  pm.addPass(createConvertSCFToOpenMPPass());
  // Inlines the alloca scopes it adds (nothing is stack-allocated in them):
  // scf-to-cf cannot leave multi-block regions inside one.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(mlir::tg::createTGCLowerArenaAllocsPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  mlir::tg::TGCEmitCEntryPassOptions entry;
  entry.functions = {options.function};
  pm.addPass(mlir::tg::createTGCEmitCEntryPass(entry));
}

void tgc::registerPipelines() {
  mlir::PassPipelineRegistration<TrainingGraphOptions>(
      "tgc-training-graph",
      "Reverse graph and optimizer update: @forward → @train_step",
      buildTrainingGraphPipeline);
  mlir::PassPipelineRegistration<CPULoweringOptions>(
      "tgc-cpu-lowering",
      "@train_step in tg → LLVM dialect for the host CPU with the C entry point",
      [](mlir::OpPassManager &pm, const CPULoweringOptions &options) {
        buildTGToLinalgPipeline(pm, options);
        buildLinalgToLLVMPipeline(pm, options);
      });
}
