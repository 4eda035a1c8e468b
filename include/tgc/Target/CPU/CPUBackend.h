//===- CPUBackend.h - the CPU target: pipeline and backend ------*- C++ -*-===//
//
// The CPU backend: a matmul schedule sized for the target CPU (run before the
// shared arena planner), parallel chunks on OpenMP, loop nests outlined, LLVM
// dialect → optimised host object code, linked with the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TARGET_CPU_CPUBACKEND_H
#define TGC_TARGET_CPU_CPUBACKEND_H

#include "tgc/Target/CPU/CPUTarget.h"
#include "tgc/Target/TargetBackend.h"

#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include "mlir/Pass/PassOptions.h"

namespace tgc::cpu {

/// The CPU backend's pipeline options (`tgc-opt --tgc-cpu-lowering`; tgc
/// fills the machine description from --mcpu).
struct CPUBackendOptions : public mlir::PassPipelineOptions<CPUBackendOptions> {
  Option<std::string> function{*this, "function",
                               llvm::cl::desc("Function to compile"),
                               llvm::cl::init("train_step")};
  // The defaults are a 512-bit, 32-register core.
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
  Option<mlir::tg::FusionMode> fusion{
      *this, "fusion", llvm::cl::desc("Elementwise fusion on linalg"),
      llvm::cl::init(mlir::tg::FusionMode::Default), TG_FUSION_MODE_CL_VALUES};
  ListOption<int64_t> matmulTiles{
      *this, "matmul-tiles",
      llvm::cl::desc("MT,NT,KT,MR,NR for every matmul (overrides the model)")};
  Option<bool> amx{*this, "amx", llvm::cl::desc("AMX tiles for bf16 matmuls"),
                   llvm::cl::init(false)};
  Option<bool> bf16Dot{
      *this, "bf16-dot",
      llvm::cl::desc("AVX512-BF16 dot products for bf16 matmuls"),
      llvm::cl::init(false)};
  Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc("Threads the matmuls' output tiles are balanced for"),
      llvm::cl::init(0)};

  void setCPU(const CPUDescription &cpu);
};

/// On tg, before convert-tg-to-linalg: expert products in chunks and, with
/// `fusion` on, attention and the norms tiled for a core's caches
/// (tgc-cpu-choose-tiles).
void buildCPUTilingPipeline(mlir::OpPassManager &pm,
                            mlir::tg::FusionMode fusion);

/// The CPU schedule on bufferized linalg: matmuls tiled and vectorised for
/// the CPU, large elementwise and reduction ops in parallel chunks. Runs
/// before tgc-plan-buffers. With `fusion` on, a product's output is zeroed
/// inside its tiles.
void buildCPUSchedulePipeline(mlir::OpPassManager &pm,
                              const CPUBackendOptions &options,
                              mlir::tg::FusionMode fusion);

/// After the arena plan: deallocation, loops, OpenMP, LLVM dialect with
/// bare-pointer memrefs and the C entry point `tgc_<function>`.
void buildCPUCodegenPipeline(mlir::OpPassManager &pm,
                             const CPUBackendOptions &options);

/// Linalg on tensors → LLVM dialect: the shared bufferization and arena
/// planner around the two stages above.
void buildCPUBackendPipeline(mlir::OpPassManager &pm,
                             const CPUBackendOptions &options);

/// Registers the CPU passes and the `tgc-cpu-lowering` pipeline.
void registerCPUBackendPasses();

/// The backend behind --target=cpu.
llvm::Expected<std::unique_ptr<TargetBackend>>
createCPUBackend(const TargetOptions &options);

} // namespace tgc::cpu

#endif // TGC_TARGET_CPU_CPUBACKEND_H
