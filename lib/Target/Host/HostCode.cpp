//===- HostCode.cpp - LLVM dialect → host object code, and the link -------===//
//
// In-process: translate to LLVM IR, target the host CPU (or --mcpu) and its
// features, run LLVM's O3 pipeline (llc alone would not optimise the IR),
// emit code; link with the host's C++ driver. Serves every backend's host
// side: the CPU step itself, the CUDA step's launches.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/Host/HostCode.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Threading.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"

using namespace tgc;
using namespace mlir;

void tgc::host::buildHostToLLVMPipeline(OpPassManager &pm,
                                        const HostToLLVMOptions &options) {
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useAlignedAlloc = options.alignedAlloc;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  if (options.mathToLibm)
    pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(createConvertControlFlowToLLVMPass());
}

void tgc::host::registerHostTranslations(mlir::DialectRegistry &registry) {
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerOpenMPDialectTranslation(registry);
}

std::unique_ptr<llvm::TargetMachine>
tgc::host::createTargetMachine(const std::string &cpu, std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
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

namespace {
/// Prepares the module for translation: drops OpenMP constructs' locations
/// and the argument and result attributes of other dialects (the tg.param /
/// tg.input names the header was generated from). The translation warns
/// once per such attribute and each warning prints the whole function: a
/// 12-layer step spent minutes formatting warnings nobody sees.
void prepareForTranslation(mlir::ModuleOp module) {
  // OpenMP constructs' source locations become ident strings in the
  // parallel regions' outlined code: with them, each layer's copy of a
  // region would differ and MergeFunctions could not merge them.
  mlir::Location unknown = mlir::UnknownLoc::get(module.getContext());
  module.walk([&](mlir::Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "omp")
      op->setLoc(unknown);
  });
  module.walk([](mlir::LLVM::LLVMFuncOp func) {
    auto strip = [](mlir::DictionaryAttr attrs) -> mlir::DictionaryAttr {
      if (!attrs)
        return attrs;
      llvm::SmallVector<mlir::NamedAttribute> kept;
      for (mlir::NamedAttribute a : attrs)
        if (a.getName().strref().starts_with("llvm."))
          kept.push_back(a);
      return mlir::DictionaryAttr::get(attrs.getContext(), kept);
    };
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      func.setArgAttrs(i, strip(func.getArgAttrDict(i)));
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      func.setResultAttrs(i, strip(func.getResultAttrDict(i)));
  });
}
} // namespace

unsigned tgc::host::widestVectorBits(const llvm::TargetMachine &tm) {
  const llvm::MCSubtargetInfo *info = tm.getMCSubtargetInfo();
  const llvm::Triple &triple = tm.getTargetTriple();
  if (triple.isX86())
    return info->checkFeatures("+avx512f") ? 512
           : info->checkFeatures("+avx")   ? 256
                                           : 128;
  return 128;
}

std::unique_ptr<llvm::Module> tgc::host::translateAndOptimize(
    mlir::ModuleOp module, llvm::LLVMContext &context, const std::string &cpu,
    std::string &error, bool slpVectorize) {
  prepareForTranslation(module);
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context);
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return nullptr;
  }
  std::unique_ptr<llvm::TargetMachine> tm = createTargetMachine(cpu, error);
  if (!tm)
    return nullptr;
  llvmModule->setTargetTriple(tm->getTargetTriple());
  llvmModule->setDataLayout(tm->createDataLayout());
  // Every function may use the target's vector units at their full width:
  // the matmul schedule's vectors are sized for it, and some CPUs' tuning
  // (skylake-avx512) would otherwise split them into 256-bit halves.
  std::string width = std::to_string(widestVectorBits(*tm));
  for (llvm::Function &f : *llvmModule) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", tm->getTargetCPU());
    f.addFnAttr("target-features", tm->getTargetFeatureString());
    f.addFnAttr("prefer-vector-width", width);
    f.addFnAttr("min-legal-vector-width", width);
    // No code compares our functions' addresses: identical ones (OpenMP's
    // outlined regions, whose addresses go to the runtime) may then be
    // merged outright instead of kept as thunks.
    if (f.hasLocalLinkage())
      f.setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  }

  // Identical loop nests (every layer's, usually) become one function
  // before O3: LLVM optimises each distinct nest once, not once per layer.
  llvm::MergeFunctionsPass::runOnModule(*llvmModule);

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = slpVectorize;
  llvm::PassBuilder pb(tm.get(), tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(*llvmModule, mam);
  // Again: OpenMP's outlined regions only become identical once O3 has
  // folded the calls to merged nests; fewer functions for code generation.
  llvm::MergeFunctionsPass::runOnModule(*llvmModule);
  return llvmModule;
}

bool tgc::host::emitCode(llvm::Module &module, CodeFileType type,
                         const std::string &cpu, llvm::raw_pwrite_stream &os,
                         std::string &error) {
  std::unique_ptr<llvm::TargetMachine> tm = createTargetMachine(cpu, error);
  if (!tm)
    return false;
  llvm::legacy::PassManager pm;
  auto fileType = type == CodeFileType::Object
                      ? llvm::CodeGenFileType::ObjectFile
                      : llvm::CodeGenFileType::AssemblyFile;
  if (tm->addPassesToEmitFile(pm, os, nullptr, fileType)) {
    error = "the host target cannot emit this file type";
    return false;
  }
  pm.run(module);
  return true;
}

llvm::Error tgc::host::linkHostExecutable(llvm::StringRef objectFile,
                                          llvm::StringRef header,
                                          llvm::StringRef modelInfo,
                                          llvm::ArrayRef<std::string> libraries,
                                          llvm::StringRef output) {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("tgc-link", dir))
    return llvm::createStringError("cannot create a temporary directory: " +
                                   ec.message());
  auto write = [&](llvm::StringRef name, llvm::StringRef text) -> llvm::Error {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return llvm::createStringError(path.str().str() + ": " + ec.message());
    os << text;
    return llvm::Error::success();
  };
  llvm::scope_exit cleanup([&] { llvm::sys::fs::remove_directories(dir); });
  if (llvm::Error err = write("train_step.h", header))
    return err;
  if (llvm::Error err = write("model_info.c", modelInfo))
    return err;
  llvm::SmallString<128> info(dir);
  llvm::sys::path::append(info, "model_info.c");

  std::string compiler = "clang++-22";
  if (const char *env = std::getenv("TGC_CXX"))
    compiler = env;
  llvm::ErrorOr<std::string> program = llvm::sys::findProgramByName(compiler);
  if (!program)
    return llvm::createStringError("cannot find the linker driver '" +
                                   compiler +
                                   "' (install clang-22, or set TGC_CXX)");
  std::string include = "-I" + dir.str().str();
  llvm::SmallVector<llvm::StringRef> args{
      *program, "-O2", "-x", "c", info, "-x", "none", include, objectFile};
  args.append(libraries.begin(), libraries.end());
  // What libtgc_runtime.a itself needs: its tokenizers' PCRE2 and utf8proc.
  llvm::SmallVector<llvm::StringRef> systemLibraries;
  llvm::StringRef(TGC_RUNTIME_SYSTEM_LIBRARIES)
      .split(systemLibraries, ',', -1, false);
  args.append(systemLibraries.begin(), systemLibraries.end());
  args.append({"-lm", "-o", output});
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*program, args, std::nullopt, {}, 0, 0,
                                     &message);
  if (rc != 0)
    return llvm::createStringError(
        "linking " + output.str() + " failed (" + compiler + " exited with " +
        std::to_string(rc) + (message.empty() ? "" : ": " + message) + ")");
  return llvm::Error::success();
}

llvm::Error tgc::host::emitHostCode(ModuleOp module, CodeArtifact artifact,
                                    const std::string &cpu, bool slpVectorize,
                                    llvm::raw_pwrite_stream &os) {
  llvm::LLVMContext context;
  std::string error;
  std::unique_ptr<llvm::Module> llvmModule =
      translateAndOptimize(module, context, cpu, error, slpVectorize);
  if (!llvmModule)
    return llvm::createStringError(error);
  if (artifact == CodeArtifact::LLVMIR) {
    llvmModule->print(os, nullptr);
    return llvm::Error::success();
  }
  if (!emitCode(*llvmModule,
                artifact == CodeArtifact::Object ? CodeFileType::Object
                                                 : CodeFileType::Assembly,
                cpu, os, error))
    return llvm::createStringError(error);
  return llvm::Error::success();
}
