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
#include "tgc/Driver/StatsReport.h"
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

#include "llvm/Support/CommandLine.h"
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
enum class EmitLevel { TG, Grad };
cl::opt<EmitLevel> emitLevel(
    "emit", cl::desc("What to produce"), cl::init(EmitLevel::TG),
    cl::cat(tgcCategory),
    cl::values(clEnumValN(EmitLevel::TG, "tg",
                          "the forward graph in the tg dialect"),
               clEnumValN(EmitLevel::Grad, "grad",
                          "@train_step: the reverse graph and the optimizer "
                          "update, in the tg dialect")));

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

void setTrainingGraphOptions(TrainingGraphOptions &options,
                             const TrainingConfig &t) {
  options.optimizer = t.optimizer == OptimizerKind::SGD ? "sgd" : "adamw";
  options.beta1 = t.beta1;
  options.beta2 = t.beta2;
  options.eps = t.eps;
  options.weightDecay = t.weightDecay;
  options.momentum = t.momentum;
  options.gradClip = t.gradClip.value_or(0.0);
}

/// Runs the pipeline up to `level` on `module`.
LogicalResult lower(ModuleOp module, EmitLevel level,
                    const TrainingConfig &training) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  if (level >= EmitLevel::Grad) {
    TrainingGraphOptions options;
    setTrainingGraphOptions(options, training);
    buildTrainingGraphPipeline(pm, options);
  }
  return pm.run(module);
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

int emit(ModuleOp module) {
  std::string error;
  auto output = openOutputFile(outputFile, &error);
  if (!output)
    return reportError(outputFile + ": cannot write: " + error);
  module.print(output->os());
  output->keep();
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
  MLIRContext context(registry);

  std::string error;
  TrainingConfig training;
  StatsContext statsContext;
  OwningOpRef<ModuleOp> module =
      loadInput(context, training, statsContext, error);
  if (!module)
    return reportError(error);

  if (statsCommand)
    return printStats(*module, training, statsContext);
  if (failed(lower(*module, emitLevel, training)))
    return reportError(inputFile + ": compilation failed (see the diagnostics "
                                   "above)");
  return emit(*module);
}
