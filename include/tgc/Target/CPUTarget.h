//===- CPUTarget.h - LLVM dialect → optimised host object code ---*- C++ -*-===//
#ifndef TGC_TARGET_CPUTARGET_H
#define TGC_TARGET_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace tgc {

/// Registers the LLVM IR translations the CPU path needs.
void registerCPUTranslations(mlir::DialectRegistry &registry);

/// Translates an LLVM-dialect module to LLVM IR for the host triple and
/// runs LLVM's O3 pipeline for `cpu`: "native" (this machine's CPU and
/// features) or an LLVM CPU name such as x86-64-v3.
std::unique_ptr<llvm::Module>
translateAndOptimize(mlir::ModuleOp module, llvm::LLVMContext &context,
                     const std::string &cpu, std::string &error);

enum class CodeFileType { Assembly, Object };

/// Emits assembly or an object file of `module` for `cpu` (as above).
bool emitCode(llvm::Module &module, CodeFileType type, const std::string &cpu,
              llvm::raw_pwrite_stream &os, std::string &error);

} // namespace tgc

#endif // TGC_TARGET_CPUTARGET_H
