//===- HostCode.h - host object code and the link ---------------*- C++ -*-===//
//
// The host side every backend shares: the host program's last conversions
// to the LLVM dialect, its translation and LLVM optimisation for the host
// CPU (or --mcpu), code emission, and the link with the runtime. The CPU
// backend's whole step is host code; the CUDA backend's host code launches
// its kernels.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TARGET_HOST_HOSTCODE_H
#define TGC_TARGET_HOST_HOSTCODE_H

#include "tgc/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace tgc::host {

/// How a backend's host program reaches the LLVM dialect.
struct HostToLLVMOptions {
  /// Buffers from aligned_alloc rather than malloc plus pointer arithmetic
  /// (LLVM then knows a buffer aliases nothing else).
  bool alignedAlloc = false;
  /// Math the vector lowering left scalar becomes libm calls.
  bool mathToLibm = false;
};

/// memref, math, arith, index, ub, func (bare-pointer calls) and cf → LLVM,
/// in that order; a backend adds its own dialects' conversions after it.
void buildHostToLLVMPipeline(mlir::OpPassManager &pm,
                             const HostToLLVMOptions &options);

/// Registers the LLVM IR translations host code needs (builtin, LLVM,
/// OpenMP).
void registerHostTranslations(mlir::DialectRegistry &registry);

/// A target machine for `cpu` on the host's triple: "native" (this
/// machine's CPU and features) or an LLVM CPU name such as x86-64-v3.
/// Null, with `error` set, for an unknown name.
std::unique_ptr<llvm::TargetMachine> createTargetMachine(const std::string &cpu,
                                                         std::string &error);

/// The widest vector registers `tm`'s CPU has, in bits (what the code is
/// allowed to use at full width).
unsigned widestVectorBits(const llvm::TargetMachine &tm);

/// Translates an LLVM-dialect module to LLVM IR for the host triple and
/// runs LLVM's O3 pipeline for `cpu` (as createTargetMachine). Turning
/// `slpVectorize` off suits host code that only launches kernels: one long
/// function of argument stores, where the SLP vectorizer's search is
/// quadratic and finds nothing worth having.
std::unique_ptr<llvm::Module> translateAndOptimize(mlir::ModuleOp module,
                                                   llvm::LLVMContext &context,
                                                   const std::string &cpu,
                                                   std::string &error,
                                                   bool slpVectorize = true);

enum class CodeFileType { Assembly, Object };

/// Emits assembly or an object file of `module` for `cpu` (as above).
bool emitCode(llvm::Module &module, CodeFileType type, const std::string &cpu,
              llvm::raw_pwrite_stream &os, std::string &error);

/// Translates an LLVM-dialect module for `cpu` (translateAndOptimize) and
/// writes `artifact`: LLVM IR, assembly or an object file.
llvm::Error emitHostCode(mlir::ModuleOp module, CodeArtifact artifact,
                         const std::string &cpu, bool slpVectorize,
                         llvm::raw_pwrite_stream &os);

/// Links `objectFile` into the executable `output` with the host's C++
/// driver (clang++-22, or $TGC_CXX): the step's `header` (train_step.h) and
/// `modelInfo` (C source of tgc_model) compiled beside it, then `libraries`
/// in order (archives, -L/-l/-Wl flags), then libm.
llvm::Error linkHostExecutable(llvm::StringRef objectFile,
                               llvm::StringRef header,
                               llvm::StringRef modelInfo,
                               llvm::ArrayRef<std::string> libraries,
                               llvm::StringRef output);

} // namespace tgc::host

#endif // TGC_TARGET_HOST_HOSTCODE_H
