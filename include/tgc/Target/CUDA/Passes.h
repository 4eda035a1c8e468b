//===- Passes.h - the CUDA backend's passes ---------------------*- C++ -*-===//
#ifndef TGC_TARGET_CUDA_PASSES_H
#define TGC_TARGET_CUDA_PASSES_H

#include "tgc/Dialect/TG/IR/TGDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace tgc::cuda {

/// Tensor cores for tgc-gpu-tile-matmuls' bf16/f16 products: none (scalar
/// multiply-adds), nvvm.mma.sync (sm_80 and later), or the same fragments
/// multiplied on the host (--gpu-emulate).
enum class MMAKind { None, NVVM, Emulated };

/// Block programs (tgc-gpu-tile-matmuls): the grid loop, its phases (loops
/// over the block's threads), and its shared and per-thread buffers.
constexpr llvm::StringLiteral kBlockProgramAttrName = "tgc.gpu.block_program";
constexpr llvm::StringLiteral kPhaseAttrName = "tgc.gpu.phase";
constexpr llvm::StringLiteral kSharedAttrName = "tgc.gpu.shared";
constexpr llvm::StringLiteral kPerThreadAttrName = "tgc.gpu.per_thread";

#define GEN_PASS_DECL
#include "tgc/Target/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tgc/Target/CUDA/Passes.h.inc"

} // namespace tgc::cuda

#define TGC_MMA_KIND_CL_VALUES                                                 \
  ::llvm::cl::values(                                                          \
      clEnumValN(::tgc::cuda::MMAKind::None, "none", "scalar multiply-adds"),  \
      clEnumValN(::tgc::cuda::MMAKind::NVVM, "nvvm",                           \
                 "nvvm.mma.sync, sm_80 and later"),                            \
      clEnumValN(::tgc::cuda::MMAKind::Emulated, "emulated",                   \
                 "the same fragments, multiplied on the host"))

#endif // TGC_TARGET_CUDA_PASSES_H
