//===- tgc.cpp - the tgc compiler driver ----------------------------------===//
//
//   tgc MODEL [--emit=LEVEL] [-o FILE] [training flags]
//   tgc stats MODEL [--json] [training flags]
//
// MODEL is a model description (.json, see docs/model-format.md) or tg IR
// (.mlir). Each --emit level is a longer prefix of one pipeline.
//
//===----------------------------------------------------------------------===//

#include "tgc/Driver/TrainingFlags.h"

#include "tgc/Dialect/TG/Analysis/TrainingStats.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Driver/Executable.h"
#include "tgc/Driver/StatsReport.h"
#include "tgc/Target/CPUTarget.h"
#include "tgc/Frontend/MLIRGen.h"
#include "tgc/Frontend/ModelConfig.h"
#include "tgc/InitAll.h"
#include "tgc/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace tgc;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory tgcCategory("tgc options");

cl::SubCommand statsCommand("stats",
                            "Print parameter, FLOP and memory statistics of "
                            "one training step");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<model.json|model.mlir>"),
                               cl::Required, cl::sub(cl::SubCommand::getTopLevel()),
                               cl::sub(statsCommand));

cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(tgcCategory),
                                cl::sub(cl::SubCommand::getTopLevel()),
                                cl::sub(statsCommand));

/// Output levels, in pipeline order: each is a longer prefix of one pipeline.
enum class EmitLevel { TG, Grad, Header, Linalg, LLVMMLIR, LLVM, Asm, Obj, Exe };
cl::opt<EmitLevel> emitLevel(
    "emit",
    cl::desc("What to produce (default: exe with -o FILE, tg otherwise)"),
    cl::init(EmitLevel::TG), cl::cat(tgcCategory),
    cl::values(
        clEnumValN(EmitLevel::TG, "tg", "the forward graph in the tg dialect"),
        clEnumValN(EmitLevel::Grad, "grad",
                   "@train_step: the reverse graph and the optimizer update, in "
                   "the tg dialect"),
        clEnumValN(EmitLevel::Header, "header",
                   "train_step.h: the C ABI of the compiled step and its buffers"),
        clEnumValN(EmitLevel::Linalg, "linalg", "@train_step in linalg on tensors"),
        clEnumValN(EmitLevel::LLVMMLIR, "llvm-mlir", "the LLVM dialect"),
        clEnumValN(EmitLevel::LLVM, "llvm", "optimised LLVM IR for the host"),
        clEnumValN(EmitLevel::Asm, "asm", "host assembly"),
        clEnumValN(EmitLevel::Obj, "obj", "a host object file (C ABI in train_step.h)"),
        clEnumValN(EmitLevel::Exe, "exe",
                   "a standalone training executable (object + runtime)")));

enum class Target { CPU };
cl::opt<Target> target("target", cl::desc("Code generation target"),
                       cl::init(Target::CPU), cl::cat(tgcCategory),
                       cl::values(clEnumValN(Target::CPU, "cpu",
                                             "the host CPU (default)")));

cl::opt<bool> statsJson("json", cl::desc("Print statistics as one JSON object"),
                        cl::sub(statsCommand), cl::cat(tgcCategory));

/// Reports `message` as tgc's error and returns the exit code for it.
int reportError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "tgc") << message << "\n";
  return 1;
}

/// Loads the input as a module holding @forward: model files through the
/// front end, .mlir files through the parser (diagnostics at file:line:col).
/// `training` receives the file's training settings with the flags applied.
OwningOpRef<ModuleOp> loadInput(MLIRContext &context, TrainingConfig &training,
                                std::optional<ModelConfig> &model,
                                StatsContext &stats, std::string &error) {
  stats.input = inputFile;
  StringRef path = inputFile;
  if (path.ends_with(".mlir")) {
    std::string openError;
    auto file = openInputFile(path, &openError);
    if (!file) {
      error = (path + ": cannot read: " + openError).str();
      return nullptr;
    }
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module) {
      error = (path + ": invalid tg IR (see the diagnostics above)").str();
      return nullptr;
    }
    applyTrainingFlags(training);
    if (llvm::Error err = checkRematFlags(training)) {
      error = llvm::toString(std::move(err));
      return nullptr;
    }
    return module;
  }

  llvm::Expected<ModelConfig> config = loadModelConfig(path);
  if (!config) {
    error = llvm::toString(config.takeError());
    return nullptr;
  }
  if (llvm::Error err = applyTrainingFlags(*config)) {
    error = llvm::toString(std::move(err));
    return nullptr;
  }
  training = config->training;
  model = *config;
  stats.modelType = config->modelType;
  stats.batchSize = training.batchSize;
  stats.seqLen = config->family == ModelFamily::MLP ? 1 : config->seqLen();
  stats.dtype = stringifyDType(training.dtype).str();
  stats.optimizer = training.optimizer == OptimizerKind::SGD ? "sgd" : "adamw";
  OwningOpRef<ModuleOp> module = buildForwardModule(context, *config);
  if (failed(verify(*module))) {
    error = (path + ": internal error: the generated forward graph does not "
                    "verify")
                .str();
    return nullptr;
  }
  return module;
}


/// Runs the tg-level pipeline (training graph) on `module`; compiled levels
/// also return the gradients (for the runtime's --dump-grads).
LogicalResult buildTrainStep(ModuleOp module, const TrainingConfig &training,
                             bool forCompilation) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  TrainingGraphOptions options;
  setTrainingGraphOptions(options, training);
  options.returnGradients = forCompilation;
  buildTrainingGraphPipeline(pm, options);
  return pm.run(module);
}

/// tg @train_step → linalg, then (if `toLLVM`) → LLVM dialect.
LogicalResult lowerTrainStep(ModuleOp module, bool toLLVM) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  CPULoweringOptions options;
  buildTGToLinalgPipeline(pm, options);
  if (toLLVM)
    buildLinalgToLLVMPipeline(pm, options);
  return pm.run(module);
}

/// Runs the pipeline up to `level` on `module` (the stats use this too).
LogicalResult lower(ModuleOp module, EmitLevel level,
                    const TrainingConfig &training) {
  if (level == EmitLevel::TG)
    return success();
  return buildTrainStep(module, training, level > EmitLevel::Grad);
}

/// `tgc stats`: figures read off the generated train step.
int printStats(ModuleOp module, const TrainingConfig &training,
               const StatsContext &context) {
  if (failed(lower(module, EmitLevel::Grad, training)))
    return reportError(inputFile + ": building the train step failed (see "
                                   "the diagnostics above)");
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  mlir::tg::TrainingStats stats = mlir::tg::computeTrainingStats(step);
  std::string error;
  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return reportError(outputFile + ": cannot write: " + error);
  if (statsJson)
    printStatsJson(output->os(), context, stats);
  else
    printStatsTable(output->os(), context, stats);
  output->keep();
  return 0;
}

std::string runtimeLibraryPath(const char *argv0) {
  std::string exe = llvm::sys::fs::getMainExecutable(argv0, (void *)&runtimeLibraryPath);
  llvm::SmallString<256> path(llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(path, "lib", "libtgc_runtime.a");
  return path.str().str();
}

/// Writes `text` to the output file.
int writeOutput(llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::string error;
  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return reportError(outputFile + ": cannot write: " + error);
  write(output->os());
  output->keep();
  return 0;
}

/// Produces `level` from a module holding @forward.
int compile(ModuleOp module, EmitLevel level, const TrainingConfig &training,
            const ModelConfig *config, const char *argv0) {
  auto failedCompile = [&] {
    return reportError(inputFile + ": compilation failed (see the diagnostics above)");
  };
  if (failed(lower(module, level, training)))
    return failedCompile();
  if (level <= EmitLevel::Grad)
    return writeOutput([&](llvm::raw_ostream &os) { module.print(os); });

  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  llvm::Expected<std::vector<BufferDesc>> buffers = describeBuffers(step, config);
  if (!buffers)
    return reportError(inputFile + ": " + llvm::toString(buffers.takeError()));
  ModelSummary summary = summarize(config, training, inputFile);
  if (level == EmitLevel::Header)
    return writeOutput([&](llvm::raw_ostream &os) { os << generateHeader(*buffers, summary); });

  for (const BufferDesc &b : *buffers)
    if (b.dtype != 0 /*TGC_F32*/ && (b.role == 0 || b.role == 4))
      return reportError(inputFile + ": the CPU target compiles f32 models only (parameter '" +
                         b.name + "' is not f32); use --dtype=f32");
  if (failed(lowerTrainStep(module, level >= EmitLevel::LLVMMLIR)))
    return failedCompile();
  if (level <= EmitLevel::LLVMMLIR)
    return writeOutput([&](llvm::raw_ostream &os) { module.print(os); });

  llvm::LLVMContext llvmContext;
  std::string error;
  std::unique_ptr<llvm::Module> llvmModule = translateAndOptimize(module, llvmContext, error);
  if (!llvmModule)
    return reportError(inputFile + ": " + error);
  if (level == EmitLevel::LLVM)
    return writeOutput([&](llvm::raw_ostream &os) { llvmModule->print(os, nullptr); });

  if (level == EmitLevel::Asm || level == EmitLevel::Obj) {
    std::unique_ptr<llvm::ToolOutputFile> output = openOutputFile(outputFile, &error);
    if (!output)
      return reportError(outputFile + ": cannot write: " + error);
    if (!emitCode(*llvmModule,
                  level == EmitLevel::Obj ? CodeFileType::Object : CodeFileType::Assembly,
                  output->os(), error))
      return reportError(error);
    output->keep();
    return 0;
  }

  // An executable: object in a temporary file, then the link.
  if (outputFile == "-")
    return reportError("--emit=exe needs -o FILE");
  llvm::SmallString<128> objectPath;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("tgc", "o", fd, objectPath))
    return reportError("cannot create a temporary object file: " + ec.message());
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    if (!emitCode(*llvmModule, CodeFileType::Object, os, error))
      return reportError(error);
  }
  llvm::Error linked = linkExecutable(objectPath, *buffers, summary,
                                      runtimeLibraryPath(argv0), outputFile);
  llvm::sys::fs::remove(objectPath);
  if (linked)
    return reportError(llvm::toString(std::move(linked)));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions({&tgcCategory, &trainingFlagsCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "tgc: compiles transformer model descriptions into training steps\n\n"
      "  tgc MODEL [--emit=LEVEL] [-o FILE] [training flags]\n"
      "  tgc stats MODEL [--json] [training flags]\n\n"
      "MODEL is a model description (.json: a Hugging Face config.json for\n"
      "llama/mistral/gpt2, or a tgc MLP description) or tg IR (.mlir).\n\n"
      "MLIR debugging flags also work (see --help-hidden), e.g.\n"
      "  --mlir-print-ir-after-all, --mlir-print-ir-after=<pass>,\n"
      "  --mlir-print-ir-tree-dir=<dir>, --mlir-timing.\n");

  DialectRegistry registry;
  registerAllDialects(registry);
  registerCPUTranslations(registry);
  MLIRContext context(registry);

  std::string error;
  TrainingConfig training;
  StatsContext statsContext;
  std::optional<ModelConfig> model;
  OwningOpRef<ModuleOp> module =
      loadInput(context, training, model, statsContext, error);
  if (!module)
    return reportError(error);

  if (statsCommand)
    return printStats(*module, training, statsContext);
  EmitLevel level = emitLevel;
  if (!emitLevel.getNumOccurrences() && outputFile != "-")
    level = EmitLevel::Exe;
  return compile(*module, level, training, model ? &*model : nullptr, argv[0]);
}
