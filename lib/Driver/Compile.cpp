//===- Compile.cpp - from a tg module to each --emit level ----------------===//

#include "tgc/Driver/Compile.h"

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Driver/Executable.h"
#include "tgc/Driver/TrainingFlags.h"
#include "tgc/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace tgc;

namespace {

constexpr llvm::StringLiteral kStepName = "train_step";

/// Counts the kernels and bytes of the step the target's schedule made
/// (tgc/Target/KernelCount.h).
struct CountKernelsPass
    : public PassWrapper<CountKernelsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CountKernelsPass)
  explicit CountKernelsPass(KernelCounts *counts) : counts(counts) {}
  StringRef getArgument() const final { return "tgc-count-kernels"; }

  void runOnOperation() override { countKernels(getOperation(), *counts); }

  KernelCounts *counts;
};

} // namespace

LogicalResult
tgc::runPassPipeline(ModuleOp module,
                     llvm::function_ref<void(OpPassManager &)> build) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  applyDefaultTimingPassManagerCLOptions(pm);
  build(pm);
  return pm.run(module);
}

llvm::Error
tgc::writeOutputFile(llvm::StringRef path,
                     llvm::function_ref<void(llvm::raw_ostream &)> write) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output = openOutputFile(path, &error);
  if (!output)
    return llvm::createStringError(path.str() + ": cannot write: " + error);
  write(output->os());
  output->keep();
  return llvm::Error::success();
}

LogicalResult tgc::buildTrainStep(ModuleOp module,
                                  const TrainingConfig &training,
                                  bool returnGradients,
                                  bool lowPrecisionSaves) {
  return runPassPipeline(module, [&](OpPassManager &pm) {
    TrainingGraphOptions options;
    setTrainingGraphOptions(options, training);
    options.returnGradients = returnGradients;
    options.lowPrecisionSaves = lowPrecisionSaves;
    buildTrainingGraphPipeline(pm, options);
  });
}

FailureOr<int64_t> tgc::planTrainStep(ModuleOp module,
                                      const TargetBackend &target,
                                      tg::FusionMode fusion,
                                      KernelCounts *counts) {
  // The runtime updates parameters and state in place when the tg step
  // allows it: the lowering and its fusions must keep every read of an old
  // value before the op that writes the new one.
  auto step = module.lookupSymbol<func::FuncOp>(kStepName);
  bool inPlace = step && canUpdateInPlace(step);
  if (failed(runPassPipeline(module, [&](OpPassManager &pm) {
        buildTGToLinalgPipeline(pm, kStepName, fusion,
                                [&](OpPassManager &tiling) {
                                  target.buildTilingPipeline(tiling, fusion);
                                });
      })))
    return failure();
  if (inPlace) {
    step = module.lookupSymbol<func::FuncOp>(kStepName);
    std::string late = step ? findReadAfterUpdate(step) : "";
    if (!late.empty())
      return step.emitError("internal error: the lowered step reads '")
             << late << "' after its in-place update";
  }
  if (failed(runPassPipeline(module, [&](OpPassManager &pm) {
        buildBufferizePipeline(pm, [&](OpPassManager &nested) {
          target.buildSchedulePipeline(nested, fusion);
          if (counts)
            nested.addPass(std::make_unique<CountKernelsPass>(counts));
        });
      })))
    return failure();
  auto arena = module->getAttrOfType<IntegerAttr>(tg::kArenaBytesAttrName);
  return arena ? arena.getInt() : 0;
}

llvm::Error tgc::compile(ModuleOp module, const CompileRequest &request,
                         const TrainingConfig &training,
                         const ModelConfig *model,
                         const TargetBackend &target) {
  EmitLevel level = request.level;
  auto failedCompile = [&] {
    return llvm::createStringError(
        request.input + ": compilation failed (see the diagnostics above)");
  };
  auto print = [&](auto &&printer) {
    return writeOutputFile(request.output, printer);
  };
  if (level == EmitLevel::TG)
    return print([&](llvm::raw_ostream &os) { module.print(os); });
  if (failed(
          buildTrainStep(module, training,
                         request.returnGradients && level > EmitLevel::Grad)))
    return failedCompile();
  if (level == EmitLevel::Grad)
    return print([&](llvm::raw_ostream &os) { module.print(os); });

  auto step = module.lookupSymbol<func::FuncOp>(kStepName);
  llvm::Expected<std::vector<BufferDesc>> buffers =
      describeBuffers(step, model);
  if (!buffers)
    return llvm::createStringError(request.input + ": " +
                                   llvm::toString(buffers.takeError()));
  ModelSummary summary = summarize(model, training, request.input);
  summary.updateInPlace = canUpdateInPlace(step);
  describeLora(summary, *buffers, step, training, model);
  if (auto processes =
          step->getAttrOfType<IntegerAttr>(tg::TGDialect::kProcessesAttrName))
    summary.zeroProcesses = processes.getInt();
  if (level == EmitLevel::Header)
    return print([&](llvm::raw_ostream &os) {
      os << generateHeader(*buffers, summary);
    });

  if (llvm::Error err = target.checkTrainStep(step))
    return llvm::createStringError(request.input + ": " +
                                   llvm::toString(std::move(err)));
  if (level == EmitLevel::Linalg) {
    if (failed(runPassPipeline(module, [&](OpPassManager &pm) {
          buildTGToLinalgPipeline(
              pm, kStepName, training.fusion, [&](OpPassManager &tiling) {
                target.buildTilingPipeline(tiling, training.fusion);
              });
        })))
      return failedCompile();
    return print([&](llvm::raw_ostream &os) { module.print(os); });
  }
  FailureOr<int64_t> arena = planTrainStep(module, target, training.fusion);
  if (failed(arena))
    return failedCompile();
  if (level == EmitLevel::GPU)
    return emitKernels(module, target, kStepName, request.input,
                       request.output);
  if (failed(runPassPipeline(module, [&](OpPassManager &pm) {
        target.buildCodegenPipeline(pm, kStepName);
      })))
    return failedCompile();
  summary.arenaBytes = *arena;
  if (level == EmitLevel::LLVMMLIR)
    return print([&](llvm::raw_ostream &os) { module.print(os); });
  if (level == EmitLevel::PTX)
    return emitDeviceAssembly(module, target, request.input, request.output);

  return emitCode(module, level, request.input, request.output, target,
                  [&](llvm::StringRef object) {
                    return target.linkExecutable(
                        object, generateHeader(*buffers, summary),
                        generateModelInfo(*buffers, summary),
                        training.dataParallel, request.output);
                  });
}

llvm::Error tgc::emitKernels(ModuleOp module, const TargetBackend &target,
                             llvm::StringRef function, llvm::StringRef input,
                             llvm::StringRef output) {
  std::string refused;
  bool ran = succeeded(runPassPipeline(module, [&](OpPassManager &pm) {
    if (llvm::Error err = target.buildKernelPipeline(pm, function))
      refused = llvm::toString(std::move(err));
  }));
  if (!refused.empty())
    return llvm::createStringError(input + ": " + refused);
  if (!ran)
    return llvm::createStringError(
        input + ": compilation failed (see the diagnostics above)");
  return writeOutputFile(output,
                         [&](llvm::raw_ostream &os) { module.print(os); });
}

llvm::Error tgc::emitDeviceAssembly(ModuleOp module,
                                    const TargetBackend &target,
                                    llvm::StringRef input,
                                    llvm::StringRef output) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (llvm::Error err = target.emitDeviceAssembly(module, os))
    return llvm::createStringError(input + ": " +
                                   llvm::toString(std::move(err)));
  return writeOutputFile(output, [&](llvm::raw_ostream &out) { out << text; });
}

llvm::Error
tgc::emitCode(ModuleOp module, EmitLevel level, llvm::StringRef input,
              llvm::StringRef outputPath, const TargetBackend &target,
              llvm::function_ref<llvm::Error(llvm::StringRef)> link) {
  // The target's errors name the input; the file system's their path.
  auto prefixed = [&](llvm::Error err) -> llvm::Error {
    if (!err)
      return llvm::Error::success();
    return llvm::createStringError(input + ": " +
                                   llvm::toString(std::move(err)));
  };
  if (level != EmitLevel::Exe) {
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> output =
        openOutputFile(outputPath, &error);
    if (!output)
      return llvm::createStringError(outputPath + ": cannot write: " + error);
    CodeArtifact artifact = level == EmitLevel::LLVM  ? CodeArtifact::LLVMIR
                            : level == EmitLevel::Asm ? CodeArtifact::Assembly
                                                      : CodeArtifact::Object;
    if (llvm::Error err = target.emit(module, artifact, output->os()))
      return prefixed(std::move(err));
    output->keep();
    return llvm::Error::success();
  }
  // An executable: object in a temporary file, then the backend's link.
  if (outputPath == "-")
    return llvm::createStringError("--emit=exe needs -o FILE");
  llvm::SmallString<128> objectPath;
  int fd;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("tgc", "o", fd, objectPath))
    return llvm::createStringError("cannot create a temporary object file: " +
                                   ec.message());
  llvm::scope_exit removeObject([&] { llvm::sys::fs::remove(objectPath); });
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    if (llvm::Error err = target.emit(module, CodeArtifact::Object, os))
      return prefixed(std::move(err));
  }
  return prefixed(link(objectPath));
}
