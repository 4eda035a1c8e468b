//===- tgc.cpp - the tgc compiler driver ----------------------------------===//
//
//   tgc MODEL [--emit=LEVEL] [-o FILE] [training flags]
//   tgc stats MODEL [--json] [--memory] [--remat-sweep] [training flags]
//   tgc tokenize|detokenize TOKENIZER [FILE]
//
// MODEL is a model description (.json, see docs/model-format.md) or tg IR
// (.mlir). Each --emit level is a longer prefix of one pipeline.
//
//===----------------------------------------------------------------------===//

#include "tgc/Driver/TrainingFlags.h"

#include "TokenizeCommands.h"

#include "tgc/Dialect/TG/Transforms/Freeze.h"
#include "tgc/Dialect/TG/Transforms/Lora.h"
#include "tgc/Driver/Compile.h"
#include "tgc/Driver/Generation.h"
#include "tgc/Driver/GenerationStats.h"
#include "tgc/Driver/Stats.h"
#include "tgc/Frontend/MLIRGen.h"
#include "tgc/Frontend/ModelConfig.h"
#include "tgc/InitAll.h"
#include "tgc/Target/TargetBackend.h"

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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
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

cl::opt<std::string>
    inputFile(cl::Positional, cl::desc("<model.json|model.mlir>"), cl::Required,
              cl::sub(cl::SubCommand::getTopLevel()), cl::sub(statsCommand));

cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(tgcCategory),
                                cl::sub(cl::SubCommand::getTopLevel()),
                                cl::sub(statsCommand));

cl::opt<EmitLevel, false, EnumFlagParser<EmitLevel>> emitLevel(
    "emit",
    cl::desc("What to produce (default: exe with -o FILE, tg otherwise)"),
    cl::init(EmitLevel::TG), cl::cat(tgcCategory),
    cl::values(
        clEnumValN(EmitLevel::TG, "tg", "the forward graph in the tg dialect"),
        clEnumValN(
            EmitLevel::Grad, "grad",
            "@train_step: the reverse graph and the optimizer update, in "
            "the tg dialect"),
        clEnumValN(
            EmitLevel::Header, "header",
            "train_step.h: the C ABI of the compiled step and its buffers"),
        clEnumValN(EmitLevel::Linalg, "linalg",
                   "@train_step in linalg on tensors"),
        clEnumValN(EmitLevel::GPU, "gpu",
                   "GPU targets: kernels (gpu.module) and the host program "
                   "launching them"),
        clEnumValN(EmitLevel::LLVMMLIR, "llvm-mlir", "the LLVM dialect"),
        clEnumValN(EmitLevel::PTX, "ptx",
                   "GPU targets: the kernels' PTX (what the executable "
                   "embeds)"),
        clEnumValN(EmitLevel::LLVM, "llvm", "optimised LLVM IR for the host"),
        clEnumValN(EmitLevel::Asm, "asm", "host assembly"),
        clEnumValN(EmitLevel::Obj, "obj",
                   "a host object file (C ABI in train_step.h)"),
        clEnumValN(EmitLevel::Exe, "exe",
                   "a standalone training executable (object + runtime)")));

/// What a model file compiles to.
enum class Program { Train, Generate };

cl::opt<Program, false, EnumFlagParser<Program>> program(
    "program", cl::desc("What to compile from a language model's file"),
    cl::init(Program::Train), cl::cat(tgcCategory),
    cl::values(clEnumValN(Program::Train, "train",
                          "the training step (@train_step)"),
               clEnumValN(Program::Generate, "generate",
                          "generation with a KV cache: @prefill (a prompt "
                          "chunk) and @decode (one token)")));

cl::opt<int64_t> prefillTokens(
    "prefill-tokens",
    cl::desc("--program=generate: prompt tokens per @prefill call (at most "
             "the cache length)"),
    cl::init(64), cl::cat(tgcCategory));

cl::opt<TargetKind, false, EnumFlagParser<TargetKind>>
    target("target", cl::desc("Code generation target"),
           cl::init(TargetKind::CPU), cl::cat(tgcCategory),
           cl::sub(cl::SubCommand::getTopLevel()), cl::sub(statsCommand),
           cl::values(clEnumValN(TargetKind::CPU, "cpu",
                                 "the CPU (default; see --mcpu)"),
                      clEnumValN(TargetKind::CUDA, "cuda",
                                 "NVIDIA GPUs through NVVM (see --gpu-arch)")));

cl::opt<std::string>
    gpuArch("gpu-arch",
            cl::desc("GPU architecture for --target=cuda (default sm_90)"),
            cl::value_desc("sm_NN"), cl::init("sm_90"), cl::cat(tgcCategory));

cl::opt<bool> returnGradients(
    "return-gradients",
    cl::desc("Compile a step that also returns every gradient (needed by the "
             "executable's --dump-grads; keeps all gradients alive at once)"),
    cl::init(false), cl::cat(tgcCategory),
    cl::sub(cl::SubCommand::getTopLevel()), cl::sub(statsCommand));

cl::opt<bool> gpuEmulate(
    "gpu-emulate",
    cl::desc("With --target=cuda: run the GPU backend's kernel schedule "
             "(mapped parallel loops, before gpu.launch) on the host CPU, "
             "to check it without a GPU"),
    cl::init(false), cl::cat(tgcCategory));

cl::opt<std::string> targetCPU(
    "mcpu",
    cl::desc("CPU to generate code for: native (default: this machine) or an "
             "LLVM CPU name such as x86-64-v3"),
    cl::value_desc("cpu"), cl::init("native"), cl::cat(tgcCategory));

cl::list<int64_t> matmulTiles(
    "matmul-tiles",
    cl::desc("Tile every matmul as MT,NT,KT,MR,NR instead of the tile model's "
             "choice for --mcpu (output tile, K tile, register tile)"),
    cl::value_desc("MT,NT,KT,MR,NR"), cl::CommaSeparated, cl::cat(tgcCategory));

cl::opt<bool> statsJson("json", cl::desc("Print statistics as one JSON object"),
                        cl::sub(statsCommand), cl::cat(tgcCategory));
cl::opt<bool> statsMemory("memory",
                          cl::desc("List every saved activation: its layer, "
                                   "size and which backward op reads it"),
                          cl::sub(statsCommand), cl::cat(tgcCategory));
cl::opt<std::string> memoryTimeline(
    "memory-timeline",
    cl::desc(
        "Write live bytes over the step as a Chrome trace (chrome://tracing, "
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
    OwningOpRef<ModuleOp> module =
        parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module) {
      error = (path + ": invalid tg IR (see the diagnostics above)").str();
      return nullptr;
    }
    if (llvm::Error err = applyTrainingFlags(training)) {
      error = llvm::toString(std::move(err));
      return nullptr;
    }
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
  stats.idleExpertParameters =
      config->moe.idleExpertParameters(config->hiddenSize);
  stats.batchSize = training.batchSize * training.gradAccum;
  stats.seqLen = config->family == ModelFamily::MLP ? 1 : config->seqLen();
  stats.dtype = stringifyDType(training.dtype).str();
  stats.precision = mlir::tg::stringifyPrecision(training.precision).str();
  stats.optimizer = stringifyOptimizerKind(training.optimizer).str();
  OwningOpRef<ModuleOp> module = buildForwardModule(context, *config);
  if (failed(verify(*module))) {
    // The verifier's error above names the problem (e.g. sizes whose
    // element or byte counts overflow 64 bits).
    error =
        (path + ": the forward graph built from this model is invalid (see the "
                "error above)")
            .str();
    return nullptr;
  }
  return module;
}

std::string runtimeLibraryPath(const char *argv0) {
  std::string exe =
      llvm::sys::fs::getMainExecutable(argv0, (void *)&runtimeLibraryPath);
  llvm::SmallString<256> path(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(path, "lib", "libtgc_runtime.a");
  return path.str().str();
}

/// What to produce: --emit, else an executable when writing to a file (the
/// option's documented default).
EmitLevel requestedLevel() {
  return !emitLevel.getNumOccurrences() && outputFile != "-"
             ? EmitLevel::Exe
             : emitLevel.getValue();
}

/// Prints `err` as tgc's error; the exit code.
int report(llvm::Error err) {
  if (!err)
    return 0;
  return reportError(llvm::toString(std::move(err)));
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
  cl::HideUnrelatedOptions(
      {&tgcCategory, &trainingFlagsCategory(), &tokenizerCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "tgc: compiles transformer model descriptions into training steps\n\n"
      "  tgc MODEL [--emit=LEVEL] [-o FILE] [training flags]\n"
      "  tgc stats MODEL [--json] [--memory] [--remat-sweep] [training "
      "flags]\n"
      "  tgc tokenize TOKENIZER [FILE] [--add-special-tokens]\n"
      "  tgc detokenize TOKENIZER [FILE] [--skip-special-tokens]\n\n"
      "MODEL is a model description (.json: a Hugging Face config.json of\n"
      "a family docs/model-format.md lists (llama, mistral, qwen2, qwen3,\n"
      "phi3, gemma, gemma2, gemma3_text, olmo2, gpt2, gpt_neox; the\n"
      "mixtures of experts mixtral, qwen2_moe, qwen3_moe, olmoe), or a tgc\n"
      "MLP description) or tg IR (.mlir).\n\n"
      "MLIR debugging flags also work (see --help-hidden), e.g.\n"
      "  --mlir-print-ir-after-all, --mlir-print-ir-after=<pass>,\n"
      "  --mlir-print-ir-tree-dir=<dir>, --mlir-timing.\n");
  if (tokenizeCommandGiven())
    return runTokenizeCommand();

  if (!matmulTiles.empty() &&
      (matmulTiles.size() != 5 ||
       llvm::any_of(matmulTiles, [](int64_t size) { return size <= 0; }))) {
    std::string given;
    for (int64_t size : matmulTiles)
      given += (given.empty() ? "" : ",") + std::to_string(size);
    return reportError("--matmul-tiles: expected MT,NT,KT,MR,NR (five "
                       "positive integers), got " +
                       given);
  }
  TargetOptions targetOptions;
  targetOptions.cpu = targetCPU;
  targetOptions.matmulTiles.assign(matmulTiles.begin(), matmulTiles.end());
  targetOptions.gpuArch = gpuArch;
  targetOptions.gpuEmulate = gpuEmulate;
  if (gpuEmulate && target != TargetKind::CUDA)
    return reportError("--gpu-emulate needs --target=cuda");
  targetOptions.runtimeLibrary = runtimeLibraryPath(argv[0]);
  llvm::Expected<std::unique_ptr<TargetBackend>> backend =
      createTargetBackend(target, targetOptions);
  if (!backend)
    return reportError(inputFile + ": " + llvm::toString(backend.takeError()));

  DialectRegistry registry;
  registerAllDialects(registry);
  (*backend)->registerTranslations(registry);
  MLIRContext context(registry);

  std::string error;
  TrainingConfig training;
  StatsContext statsContext;
  std::optional<ModelConfig> model;
  OwningOpRef<ModuleOp> module =
      loadInput(context, training, model, statsContext, error);
  if (!module)
    return reportError(error);
  // ZeRO-3's prefetch planner times the step at the target's rate unless
  // --compute-rate says otherwise.
  if (training.zeroStage == 3 && training.computeRate <= 0)
    training.computeRate = (*backend)->estimatedComputeRate();
  // A freeze pattern that selects no parameter or all of them, reported
  // with its flag before the step is built (tg-freeze then marks the same
  // parameters again).
  if (!training.freeze.empty())
    if (auto forward = module->lookupSymbol<func::FuncOp>("forward"))
      if (llvm::Error err = tg::freezeParameters(forward, training.freeze))
        return reportError(inputFile + ": --freeze (training.freeze): " +
                           llvm::toString(std::move(err)));

  // LoRA settings that select nothing or do not fit a module, reported
  // with their flags (tg-lora then adds the adapters to the step).
  if (training.lora.enabled())
    if (auto forward = module->lookupSymbol<func::FuncOp>("forward")) {
      OwningOpRef<func::FuncOp> trial = forward.clone();
      if (llvm::Error err = tg::addLoraAdapters(*trial, training.lora))
        return reportError(inputFile + ": --lora-* (training.lora): " +
                           llvm::toString(std::move(err)));
    }
  if (program == Program::Generate) {
    if (training.lora.enabled())
      return reportError(inputFile + ": --program=generate builds the plain "
                                     "model: merge the adapters into its "
                                     "weights with the training executable's "
                                     "--merge-to and load those with --init");
    if (!model)
      return reportError(inputFile + ": --program=generate needs a model "
                                     "file (.json), not tg IR");
    if (prefillTokens < 1)
      return reportError("--prefill-tokens: expected a positive count, got " +
                         std::to_string(prefillTokens));
    if (statsCommand) {
      for (const cl::Option *flag : std::initializer_list<const cl::Option *>{
               &statsMemory, &memoryTimeline, &rematSweep, &rematSweepSvg,
               &returnGradients})
        if (flag->getNumOccurrences())
          return reportError("tgc stats --program=generate: --" + flag->ArgStr +
                             " reports on a training step");
      GenerationStatsRequest request;
      request.input = inputFile;
      request.output = outputFile;
      request.json = statsJson;
      request.prefillTokens = prefillTokens;
      return report(runGenerationStats(context, *model, request));
    }
    GenerationRequest request;
    request.input = inputFile;
    request.output = outputFile;
    request.level = requestedLevel();
    request.prefillTokens = prefillTokens;
    return report(compileGeneration(context, *model, request, **backend));
  }

  if (statsCommand) {
    StatsRequest request;
    request.output = outputFile;
    request.json = statsJson;
    request.memory = statsMemory;
    request.returnGradients = returnGradients;
    request.rematSweep = rematSweep;
    request.memoryTimeline = memoryTimeline;
    request.rematSweepSvg = rematSweepSvg;
    return report(
        runStats(*module, training, statsContext, request, **backend));
  }
  if (returnGradients && training.zeroStage > 0)
    return reportError(inputFile + ": --return-gradients: with --zero=" +
                       std::to_string(training.zeroStage) +
                       " each process holds only its shard of every "
                       "gradient");
  CompileRequest request;
  request.input = inputFile;
  request.output = outputFile;
  request.level = requestedLevel();
  request.returnGradients = returnGradients;
  return report(compile(*module, request, training, model ? &*model : nullptr,
                        **backend));
}
