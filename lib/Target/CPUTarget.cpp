//===- CPUTarget.cpp - LLVM dialect → optimised host object code ----------===//
//
// In-process: translate to LLVM IR, target this machine's CPU and features,
// run LLVM's O3 pipeline (llc alone would not optimise the IR), emit code.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CPUTarget.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

using namespace tgc;

void tgc::registerCPUTranslations(mlir::DialectRegistry &registry) {
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerOpenMPDialectTranslation(registry);
}

namespace {
std::unique_ptr<llvm::TargetMachine> hostTargetMachine(const std::string &cpu,
                                                     std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string name, features;
  if (cpu.empty() || cpu == "native") {
    name = llvm::sys::getHostCPUName().str();
    for (auto &feature : llvm::sys::getHostCPUFeatures())
      features += (feature.second ? "+" : "-") + feature.first().str() + ",";
  } else {
    std::unique_ptr<llvm::MCSubtargetInfo> info(
        target->createMCSubtargetInfo(triple, "", ""));
    if (!info || !info->isCPUStringValid(cpu)) {
      error = "--mcpu: unknown CPU '" + cpu + "' for " + triple.str() +
              " (e.g. native, x86-64-v3, skylake-avx512, znver4)";
      return nullptr;
    }
    name = cpu;
  }
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, name, features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}
} // namespace

std::unique_ptr<llvm::Module>
tgc::translateAndOptimize(mlir::ModuleOp module, llvm::LLVMContext &context,
                          const std::string &cpu, std::string &error) {
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context);
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return nullptr;
  }
  std::unique_ptr<llvm::TargetMachine> tm = hostTargetMachine(cpu, error);
  if (!tm)
    return nullptr;
  llvmModule->setTargetTriple(tm->getTargetTriple());
  llvmModule->setDataLayout(tm->createDataLayout());
  // Every function may use the host's vector units.
  for (llvm::Function &f : *llvmModule) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", tm->getTargetCPU());
    f.addFnAttr("target-features", tm->getTargetFeatureString());
  }

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(tm.get(), tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(*llvmModule, mam);
  return llvmModule;
}

bool tgc::emitCode(llvm::Module &module, CodeFileType type,
                   const std::string &cpu, llvm::raw_pwrite_stream &os,
                   std::string &error) {
  std::unique_ptr<llvm::TargetMachine> tm = hostTargetMachine(cpu, error);
  if (!tm)
    return false;
  llvm::legacy::PassManager pm;
  auto fileType = type == CodeFileType::Object ? llvm::CodeGenFileType::ObjectFile
                                               : llvm::CodeGenFileType::AssemblyFile;
  if (tm->addPassesToEmitFile(pm, os, nullptr, fileType)) {
    error = "the host target cannot emit this file type";
    return false;
  }
  pm.run(module);
  return true;
}
