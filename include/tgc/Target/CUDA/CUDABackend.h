//===- CUDABackend.h - the CUDA target: pipeline and backend ----*- C++ -*-===//
//
// NVIDIA GPUs through MLIR's NVVM path: every buffer operation becomes a
// kernel (parallel loops mapped to blocks and threads), kernels are
// outlined, lowered to NVVM and serialised to PTX embedded in the host
// object; the host program launches them through the `mgpu*` runtime
// (lib/Runtime/CUDA, over the CUDA driver API).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TARGET_CUDA_CUDABACKEND_H
#define TGC_TARGET_CUDA_CUDABACKEND_H

#include "tgc/Target/TargetBackend.h"

#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include "mlir/Pass/PassOptions.h"

namespace tgc::cuda {

/// The CUDA backend's pipeline options (`tgc-opt --tgc-cuda-lowering`).
struct CUDABackendOptions
    : public mlir::PassPipelineOptions<CUDABackendOptions> {
  Option<std::string> function{*this, "function",
                               llvm::cl::desc("Function to compile"),
                               llvm::cl::init("train_step")};
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("GPU architecture (sm_90, ...)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features", llvm::cl::desc("PTX features (the PTX ISA version)"),
      llvm::cl::init("+ptx80")};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit (libdevice for math; ptxas for bin)"),
      llvm::cl::init("")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Kernel binary: isa (PTX, JIT-compiled by the driver at "
                     "load), bin (cubin), fatbin"),
      llvm::cl::init("isa")};
  Option<int64_t> threadsPerBlock{*this, "threads-per-block",
                                  llvm::cl::desc("Threads per block"),
                                  llvm::cl::init(256)};
  Option<mlir::tg::FusionMode> fusion{
      *this, "fusion", llvm::cl::desc("Elementwise fusion on linalg"),
      llvm::cl::init(mlir::tg::FusionMode::Default), TG_FUSION_MODE_CL_VALUES};
};

/// On tg, before convert-tg-to-linalg: with `fusion` on, attention in
/// batched tiles (tgc-gpu-choose-tiles).
void buildCUDATilingPipeline(mlir::OpPassManager &pm,
                             mlir::tg::FusionMode fusion);

/// Kernel formation on bufferized linalg (before tgc-plan-buffers): buffer
/// operations as parallel loops mapped to blocks and threads; with
/// `launches`, converted to gpu.launch (without: the host-executable form
/// that --gpu-emulate runs on the CPU).
void buildCUDASchedulePipeline(mlir::OpPassManager &pm,
                               const CUDABackendOptions &options,
                               bool launches = true);

/// After the arena plan: kernels outlined into a gpu.module, launched from
/// the host program (what --emit=gpu prints).
void buildCUDAKernelPipeline(mlir::OpPassManager &pm,
                             const CUDABackendOptions &options);

/// buildCUDAKernelPipeline, then NVVM, the serialised kernels and the host
/// program in the LLVM dialect with the C entry point `tgc_<function>`.
void buildCUDACodegenPipeline(mlir::OpPassManager &pm,
                              const CUDABackendOptions &options);

/// Registers the CUDA backend's passes and `tgc-cuda-lowering`.
void registerCUDABackendPasses();

/// The CUDA toolkit tgc was configured with ("" if none).
llvm::StringRef configuredToolkit();

/// --target=cuda. `hostBackend` is the host CPU's backend, which
/// --gpu-emulate compiles and links the kernel schedule with.
llvm::Expected<std::unique_ptr<TargetBackend>>
createCUDABackend(const TargetOptions &options,
                  std::unique_ptr<TargetBackend> hostBackend);

} // namespace tgc::cuda

#endif // TGC_TARGET_CUDA_CUDABACKEND_H
