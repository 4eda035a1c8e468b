//===- Pipelines.h - pass pipelines shared by tgc and tgc-opt ---*- C++ -*-===//
//
// Each pipeline has an options struct and one build function, used both by
// the driver and, through its registration, by `tgc-opt`, so a lit test of
// `tgc-opt --tgc-training-graph` runs exactly what `tgc --emit=grad` runs.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_PIPELINES_PIPELINES_H
#define TGC_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace tgc {

/// @forward → @train_step with the optimizer update (autodiff, cleanup,
/// optimizer, rematerialisation).
struct TrainingGraphOptions
    : public mlir::PassPipelineOptions<TrainingGraphOptions> {
  Option<std::string> optimizer{*this, "optimizer",
                                llvm::cl::desc("sgd or adamw"),
                                llvm::cl::init("adamw")};
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
  Option<bool> returnGradients{
      *this, "return-gradients",
      llvm::cl::desc("Also return the gradients from the train step"),
      llvm::cl::init(false)};
  Option<std::string> remat{
      *this, "remat",
      llvm::cl::desc("Rematerialisation policy: none, layers, selective, budget"),
      llvm::cl::init("none")};
  Option<std::string> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Budget of --remat=budget (bytes, 1.5GiB, or a fraction)"),
      llvm::cl::init("")};
  Option<bool> rematReport{*this, "remat-report",
                           llvm::cl::desc("Print every remat decision"),
                           llvm::cl::init(false)};
  Option<bool> withOptimizer{
      *this, "with-optimizer",
      llvm::cl::desc("Append the optimizer update (off: gradients only)"),
      llvm::cl::init(true)};
};

void buildTrainingGraphPipeline(mlir::OpPassManager &pm,
                                const TrainingGraphOptions &options);

/// @train_step in tg → LLVM dialect for the host CPU: tg → linalg,
/// elementwise fusion, bufferization (results become out-parameters),
/// loops, LLVM dialect with bare-pointer memrefs and the C entry point
/// `tgc_train_step(void **buffers)`.
struct CPULoweringOptions : public mlir::PassPipelineOptions<CPULoweringOptions> {
  Option<std::string> function{*this, "function",
                               llvm::cl::desc("Function to compile"),
                               llvm::cl::init("train_step")};
  // The target CPU, for the matmul tile model (tgc fills these from --mcpu;
  // the defaults are a 512-bit, 32-register core).
  Option<unsigned> vectorBits{*this, "vector-bits",
                              llvm::cl::desc("Vector register width in bits"),
                              llvm::cl::init(512)};
  Option<unsigned> vectorRegisters{*this, "vector-registers",
                                   llvm::cl::desc("Number of vector registers"),
                                   llvm::cl::init(32)};
  Option<int64_t> l1CacheBytes{*this, "l1-cache-bytes",
                               llvm::cl::desc("L1 data cache per core"),
                               llvm::cl::init(32768)};
  Option<int64_t> l2CacheBytes{*this, "l2-cache-bytes",
                               llvm::cl::desc("L2 cache per core"),
                               llvm::cl::init(1048576)};
  Option<std::string> matmulTiles{
      *this, "matmul-tiles",
      llvm::cl::desc("MT,NT,KT,MR,NR for every matmul (overrides the model)"),
      llvm::cl::init("")};
};

/// Up to linalg on tensors (the --emit=linalg level).
void buildTGToLinalgPipeline(mlir::OpPassManager &pm,
                             const CPULoweringOptions &options);
/// Linalg on tensors → bufferized, scheduled matmuls, planned arena (the
/// module attribute tgc.arena_bytes); the first part of the next pipeline.
void buildBufferizePipeline(mlir::OpPassManager &pm,
                            const CPULoweringOptions &options);
/// The rest, linalg on tensors → LLVM dialect.
void buildLinalgToLLVMPipeline(mlir::OpPassManager &pm,
                               const CPULoweringOptions &options);

/// Registers every tgc pipeline with the global registry.
void registerPipelines();

} // namespace tgc

#endif // TGC_PIPELINES_PIPELINES_H
