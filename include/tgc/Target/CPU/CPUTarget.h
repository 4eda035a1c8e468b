//===- CPUTarget.h - LLVM dialect → optimised host object code ---*- C++
//-*-===//
#ifndef TGC_TARGET_CPU_CPUTARGET_H
#define TGC_TARGET_CPU_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace tgc::cpu {

/// What the code generator needs to know of a CPU: its vector unit and
/// caches (the matmul tile model reads these).
struct CPUDescription {
  std::string name;               // LLVM CPU name
  unsigned vectorBits = 128;      // widest vector register in use
  unsigned vectorRegisters = 16;  // architectural vector registers
  int64_t l1CacheBytes = 32768;   // L1 data cache per core
  int64_t l2CacheBytes = 1 << 20; // L2 cache per core
  bool amx = false;               // AMX bf16 tiles (tdpbf16ps)
  bool avx512bf16 = false;        // AVX512-BF16 dot products (vdpbf16ps)
  int64_t threads = 0; // CPUs the step's threads run on (host only; 0: unknown)
};

/// Describes `cpu`: "native" reads this machine's features (cpuid) and
/// cache sizes (sysfs); an LLVM CPU name reads its features from LLVM's
/// description of that CPU, with typical cache sizes. Unknown names are an
/// error.
std::optional<CPUDescription> describeCPU(const std::string &cpu,
                                          std::string &error);

/// Registers the LLVM IR translations the CPU path needs.
void registerCPUTranslations(mlir::DialectRegistry &registry);

/// Translates an LLVM-dialect module to LLVM IR for the host triple and
/// runs LLVM's O3 pipeline for `cpu`: "native" (this machine's CPU and
/// features) or an LLVM CPU name such as x86-64-v3. `slpVectorize` off
/// suits host code that only launches kernels: one long function of
/// argument stores, where the SLP vectorizer's search is quadratic (two
/// minutes for GPT-2 small's launches) and finds nothing worth having.
std::unique_ptr<llvm::Module> translateAndOptimize(mlir::ModuleOp module,
                                                   llvm::LLVMContext &context,
                                                   const std::string &cpu,
                                                   std::string &error,
                                                   bool slpVectorize = true);

enum class CodeFileType { Assembly, Object };

/// Emits assembly or an object file of `module` for `cpu` (as above).
bool emitCode(llvm::Module &module, CodeFileType type, const std::string &cpu,
              llvm::raw_pwrite_stream &os, std::string &error);

/// Links `objectFile` into the executable `output` with the host's C++
/// driver (clang++-22, or $TGC_CXX): the step's `header` (train_step.h) and
/// `modelInfo` (C source of tgc_model) compiled beside it, then `libraries`
/// in order (archives, -L/-l/-Wl flags), then libm.
llvm::Error linkHostExecutable(llvm::StringRef objectFile,
                               llvm::StringRef header,
                               llvm::StringRef modelInfo,
                               llvm::ArrayRef<std::string> libraries,
                               llvm::StringRef output);

} // namespace tgc::cpu

#endif // TGC_TARGET_CPU_CPUTARGET_H
