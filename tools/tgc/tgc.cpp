//===- tgc.cpp - the tgc compiler driver ----------------------------------===//
//
//   tgc MODEL [--emit=LEVEL] [-o FILE] [training flags]
//   tgc stats MODEL [--json] [--memory] [--remat-sweep] [training flags]
//
// MODEL is a model description (.json, see docs/model-format.md) or tg IR
// (.mlir). Each --emit level is a longer prefix of one pipeline.
//
//===----------------------------------------------------------------------===//

#include "tgc/Driver/TrainingFlags.h"

#include "tgc/Dialect/TG/Analysis/TrainingStats.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Remat.h"
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
#include "mlir/Support/Timing.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
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

enum class Target { CPU, CUDA };
cl::opt<Target> target("target", cl::desc("Code generation target"),
                       cl::init(Target::CPU), cl::cat(tgcCategory),
                       cl::values(clEnumValN(Target::CPU, "cpu",
                                             "the host CPU (default)"),
                                  clEnumValN(Target::CUDA, "cuda",
                                             "NVIDIA GPUs through NVVM (not built yet)")));

cl::opt<std::string> targetCPU(
    "mcpu",
    cl::desc("CPU to generate code for: native (default: this machine) or an "
             "LLVM CPU name such as x86-64-v3"),
    cl::value_desc("cpu"), cl::init("native"), cl::cat(tgcCategory));

cl::opt<std::string> matmulTiles(
    "matmul-tiles",
    cl::desc("Tile every matmul as MT,NT,KT,MR,NR instead of the tile model's "
             "choice for --mcpu (output tile, K tile, register tile)"),
    cl::value_desc("MT,NT,KT,MR,NR"), cl::init(""), cl::cat(tgcCategory));

cl::opt<bool> statsJson("json", cl::desc("Print statistics as one JSON object"),
                        cl::sub(statsCommand), cl::cat(tgcCategory));
cl::opt<bool> statsMemory("memory",
                          cl::desc("List every saved activation: its layer, "
                                   "size and which backward op reads it"),
                          cl::sub(statsCommand), cl::cat(tgcCategory));
cl::opt<std::string> memoryTimeline(
    "memory-timeline",
    cl::desc("Write live bytes over the step as a Chrome trace (chrome://tracing, "
             "ui.perfetto.dev)"),
    cl::value_desc("file.json"), cl::sub(statsCommand), cl::cat(tgcCategory));
cl::opt<bool> rematSweep("remat-sweep",
                         cl::desc("Tabulate budget -> planned peak, saved "
                                  "activations and extra FLOPs"),
                         cl::sub(statsCommand), cl::cat(tgcCategory));
cl::opt<std::string> rematSweepSvg(
    "remat-sweep-svg", cl::desc("Also draw the sweep (implies --remat-sweep)"),
    cl::value_desc("file.svg"), cl::sub(statsCommand), cl::cat(tgcCategory));

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
    // The verifier's error above names the problem (e.g. sizes whose
    // element or byte counts overflow 64 bits).
    error = (path + ": the forward graph built from this model is invalid (see the "
                    "error above)")
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
  applyDefaultTimingPassManagerCLOptions(pm);
  TrainingGraphOptions options;
  setTrainingGraphOptions(options, training);
  options.returnGradients = forCompilation;
  buildTrainingGraphPipeline(pm, options);
  return pm.run(module);
}

/// The CPU lowering's options for --mcpu and --matmul-tiles.
LogicalResult setCPULoweringOptions(CPULoweringOptions &options) {
  std::string error;
  std::optional<CPUDescription> cpu = describeCPU(targetCPU, error);
  if (!cpu) {
    reportError(inputFile + ": " + error);
    return failure();
  }
  options.vectorBits = cpu->vectorBits;
  options.vectorRegisters = cpu->vectorRegisters;
  options.l1CacheBytes = cpu->l1CacheBytes;
  options.l2CacheBytes = cpu->l2CacheBytes;
  options.matmulTiles = matmulTiles;
  return success();
}

/// tg @train_step → linalg, then (if `toLLVM`) → LLVM dialect.
LogicalResult lowerTrainStep(ModuleOp module, bool toLLVM) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  applyDefaultTimingPassManagerCLOptions(pm);
  CPULoweringOptions options;
  if (failed(setCPULoweringOptions(options)))
    return failure();
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

/// The --remat-sweep rows: budgets from the peak without rematerialisation
/// down to a tenth of it, and the fixed policies for reference.
FailureOr<std::vector<RematSweepRow>> sweepRemat(ModuleOp forwardModule,
                                                 const TrainingConfig &training) {
  OwningOpRef<ModuleOp> module = forwardModule.clone();
  TrainingConfig plain = training;
  plain.remat = "none";
  plain.memoryBudget.clear();
  plain.rematReport = false;
  if (failed(buildTrainStep(*module, plain, /*forCompilation=*/false)))
    return failure();
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  mlir::tg::TrainingStats base = mlir::tg::computeTrainingStats(step);
  double stepFlops = static_cast<double>(base.forward.flops + base.backward.flops +
                                         base.optimizer.flops);
  std::vector<RematSweepRow> rows;
  auto run = [&](std::string label, mlir::tg::RematPolicy policy,
                 mlir::tg::MemoryBudget budget) {
    RematSweepRow row;
    row.label = std::move(label);
    auto copy = llvm::cast<func::FuncOp>(step->clone());
    // Diagnostics of infeasible budgets are the table's "no plan fits".
    ScopedDiagnosticHandler quiet(module->getContext(),
                                  [](Diagnostic &) { return success(); });
    FailureOr<mlir::tg::RematResult> result =
        mlir::tg::rematerialize(copy, policy, budget);
    if (succeeded(result)) {
      mlir::tg::TrainingStats stats = mlir::tg::computeTrainingStats(copy);
      row.budgetBytes = result->budgetBytes;
      row.plannedPeak = stats.plannedPeakBytes;
      row.savedActivationBytes = stats.savedActivationBytes;
      row.extraFlops = stats.recompute.flops;
      row.extraFlopsPercent = 100.0 * row.extraFlops / std::max(1.0, stepFlops);
    } else {
      row.feasible = false;
      row.budgetBytes = budget.bytes;
    }
    copy->erase();
    rows.push_back(std::move(row));
  };
  run("none", mlir::tg::RematPolicy::None, {});
  run("selective", mlir::tg::RematPolicy::Selective, {});
  bool hasLayers = false;
  step.walk([&](Operation *op) {
    hasLayers |= op->hasAttr(mlir::tg::TGDialect::kLayerAttrName);
  });
  if (hasLayers)
    run("layers", mlir::tg::RematPolicy::Layers, {});
  for (int percent = 100; percent >= 10; percent -= 10) {
    mlir::tg::MemoryBudget budget;
    budget.bytes = base.plannedPeakBytes * percent / 100;
    run(llvm::formatv("budget {0}%", percent).str(), mlir::tg::RematPolicy::Budget,
        budget);
  }
  return rows;
}

/// The arena the compiled executable would plan (tgc-plan-buffers), from a
/// copy of the forward module.
FailureOr<int64_t> compiledArenaBytes(ModuleOp forwardModule,
                                      const TrainingConfig &training) {
  OwningOpRef<ModuleOp> module = forwardModule.clone();
  TrainingConfig quiet = training;
  quiet.rematReport = false;
  if (failed(buildTrainStep(*module, quiet, /*forCompilation=*/true)))
    return failure();
  PassManager pm(module->getContext());
  CPULoweringOptions options;
  if (failed(setCPULoweringOptions(options)))
    return failure();
  buildTGToLinalgPipeline(pm, options);
  buildBufferizePipeline(pm, options);
  if (failed(pm.run(*module)))
    return failure();
  auto arena = (*module)->getAttrOfType<IntegerAttr>("tgc.arena_bytes");
  return arena ? arena.getInt() : 0;
}

/// `tgc stats`: figures read off the generated train step.
int printStats(ModuleOp module, const TrainingConfig &training,
               StatsContext context) {
  OwningOpRef<ModuleOp> forwardModule = module.clone();
  if (failed(lower(module, EmitLevel::Grad, training)))
    return reportError(inputFile + ": building the train step failed (see "
                                   "the diagnostics above)");
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  StatsReport report;
  context.remat = training.remat;
  if (!training.memoryBudget.empty())
    context.remat += " " + training.memoryBudget;
  report.context = context;
  report.stats = mlir::tg::computeTrainingStats(step);
  if (statsMemory) {
    report.saved = mlir::tg::collectSavedActivations(step);
    FailureOr<int64_t> arena = compiledArenaBytes(*forwardModule, training);
    if (failed(arena))
      return reportError(inputFile + ": lowering the train step failed (see "
                                     "the diagnostics above)");
    report.compiledArenaBytes = *arena;
  }
  if (rematSweep || !rematSweepSvg.empty()) {
    FailureOr<std::vector<RematSweepRow>> rows = sweepRemat(*forwardModule, training);
    if (failed(rows))
      return reportError(inputFile + ": building the train step failed");
    report.sweep = std::move(*rows);
  }
  auto writeFile = [&](const std::string &path,
                       llvm::function_ref<void(llvm::raw_ostream &)> write) {
    std::string error;
    auto file = openOutputFile(path, &error);
    if (!file)
      return reportError(path + ": cannot write: " + error);
    write(file->os());
    file->keep();
    return 0;
  };
  if (!memoryTimeline.empty())
    if (int rc = writeFile(memoryTimeline, [&](llvm::raw_ostream &os) {
          writeMemoryTimeline(os, step);
        }))
      return rc;
  if (!rematSweepSvg.empty())
    if (int rc = writeFile(rematSweepSvg, [&](llvm::raw_ostream &os) {
          writeRematSweepSvg(os, report);
        }))
      return rc;
  return writeFile(outputFile, [&](llvm::raw_ostream &os) {
    if (statsJson)
      printStatsJson(os, report);
    else
      printStatsTable(os, report);
  });
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
  summary.updateInPlace = canUpdateInPlace(step);
  if (level == EmitLevel::Header)
    return writeOutput([&](llvm::raw_ostream &os) { os << generateHeader(*buffers, summary); });

  for (const BufferDesc &b : *buffers)
    if (b.dtype != 0 /*TGC_F32*/ && (b.role == 0 || b.role == 4))
      return reportError(inputFile + ": the CPU target compiles f32 models only (parameter '" +
                         b.name + "' is not f32); use --dtype=f32");
  if (failed(lowerTrainStep(module, level >= EmitLevel::LLVMMLIR)))
    return failedCompile();
  if (auto arena = module->getAttrOfType<IntegerAttr>("tgc.arena_bytes"))
    summary.arenaBytes = arena.getInt();
  if (level <= EmitLevel::LLVMMLIR)
    return writeOutput([&](llvm::raw_ostream &os) { module.print(os); });

  llvm::LLVMContext llvmContext;
  std::string error;
  std::unique_ptr<llvm::Module> llvmModule = translateAndOptimize(module, llvmContext, targetCPU, error);
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
                  targetCPU, output->os(), error))
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
    if (!emitCode(*llvmModule, CodeFileType::Object, targetCPU, os, error))
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
  // Pass names for --mlir-print-ir-after=<pass> and friends.
  registerAllPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions({&tgcCategory, &trainingFlagsCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "tgc: compiles transformer model descriptions into training steps\n\n"
      "  tgc MODEL [--emit=LEVEL] [-o FILE] [training flags]\n"
      "  tgc stats MODEL [--json] [--memory] [--remat-sweep] [training flags]\n\n"
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
  if (target == Target::CUDA)
    return reportError("--target=cuda: this tgc has no CUDA backend yet; use --target=cpu");
  if (!matmulTiles.empty()) {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(matmulTiles).split(parts, ',');
    int64_t value;
    if (parts.size() != 5 || llvm::any_of(parts, [&](llvm::StringRef p) {
          return p.trim().getAsInteger(10, value) || value <= 0;
        }))
      return reportError("--matmul-tiles: expected MT,NT,KT,MR,NR (five positive integers), got '" +
                         matmulTiles + "'");
  }
  if (!describeCPU(targetCPU, error))
    return reportError(inputFile + ": " + error);
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
