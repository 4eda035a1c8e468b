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

/// Translates an LLVM-dialect module to LLVM IR for the host (triple, data
/// layout, CPU and features of this machine) and runs LLVM's O3 pipeline.
std::unique_ptr<llvm::Module>
translateAndOptimize(mlir::ModuleOp module, llvm::LLVMContext &context,
                     std::string &error);

enum class CodeFileType { Assembly, Object };

/// Emits host assembly or an object file for `module`.
bool emitCode(llvm::Module &module, CodeFileType type,
              llvm::raw_pwrite_stream &os, std::string &error);

} // namespace tgc

#endif // TGC_TARGET_CPUTARGET_H
