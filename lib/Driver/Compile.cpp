//===- Compile.cpp - from a tg module to each --emit level ----------------===//

#include "tgc/Driver/Compile.h"

#include "tgc/Conversion/Passes.h"
#include "tgc/Target/ProductFusion.h"
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


/// Counts the kernels and bytes of the bufferized step (see KernelCounts).
struct CountKernelsPass
    : public PassWrapper<CountKernelsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CountKernelsPass)
  CountKernelsPass(KernelCounts *counts, const TargetBackend &target,
                   tg::FusionMode fusion)
      : counts(counts), target(target), fusion(fusion) {}
  StringRef getArgument() const final { return "tgc-count-kernels"; }

  void runOnOperation() override {
    // What the schedule will read and write: a copy with the casts around
    // its products as the target makes them.
    OwningOpRef<ModuleOp> copy(getOperation().clone());
    target.prepareKernelCount(*copy);
    ModuleOp module = *copy;
    // Iterations of the loops around `op` (constant trip counts): chunk
    // and tile loops, and parallel tasks (attention's, per head).
    auto repeats = [](Operation *op) {
      int64_t n = 1;
      for (Operation *parent = op->getParentOp(); parent;
           parent = parent->getParentOp()) {
        if (auto loop = dyn_cast<scf::ForOp>(parent)) {
          if (std::optional<APInt> trips = loop.getStaticTripCount())
            n *= trips->getSExtValue();
        } else if (auto tasks = dyn_cast<scf::ForallOp>(parent)) {
          if (std::optional<SmallVector<int64_t>> counts =
                  getConstantIntValues(tasks.getMixedUpperBound()))
            for (int64_t count : *counts)
              n *= count;
        }
      }
      return n;
    };
    // What one task's core keeps in its cache.
    constexpr int64_t kTaskCacheBytes = 256 << 10;
    // A buffer a parallel task makes for itself (a score tile, a copy of
    // its queries or of a key tile) of at most 256 KiB stays in that task's
    // core's cache: no trip to memory.
    auto taskLocal = [](Value operand) {
      Value root = rootBuffer(operand);
      Operation *def = root.getDefiningOp();
      return isa_and_nonnull<memref::AllocOp>(def) &&
             def->getParentOfType<scf::ForallOp>() &&
             tg::getValueBytes(root) <= kTaskCacheBytes;
    };
    // What the target does inside its products' tiles is no kernel: the
    // fill of the output, a layout change of it, and the epilogue, which
    // reads the output's tile in cache (its other buffers count).
    llvm::StringMap<size_t> sourceIndex;
    llvm::DenseSet<Operation *> doneInTiles;
    llvm::DenseMap<Operation *, Value> epilogueOutputs;
    // Layouts change inside the tiles of f32 products only (a product of
    // bf16 operands widened to f32 reads and writes its copies).
    auto inF32Tiles = [&](Operation *product) {
      return target.fusesIntoProductTiles(product) &&
             llvm::all_of(product->getOperandTypes(), [](Type t) {
               return getElementTypeOrSelf(t).isF32();
             });
    };
    // A product that packs an operand from the f32 values a loop rounded it
    // from: the loop is no kernel, the product reads the f32 values.
    llvm::DenseMap<Operation *, std::pair<Value, Value>> readsInstead;
    module.walk([&](linalg::LinalgOp product) {
      if (Operation *rounding = target.roundingPackedBy(product)) {
        doneInTiles.insert(rounding);
        readsInstead[product] = {rounding->getOperand(1),
                                 rounding->getOperand(0)};
      }
      if (fusion == tg::FusionMode::None)
        return;
      if (!target.fusesIntoProductTiles(product))
        return;
      if (linalg::FillOp fill = findAccumulatorInit(product))
        doneInTiles.insert(fill);
      // The tiles write the new layout: the product's bytes stay, the
      // transpose's go.
      if (inF32Tiles(product))
        if (linalg::TransposeOp transpose = findOutputTranspose(product))
          doneInTiles.insert(transpose);
      if (linalg::GenericOp epilogue = findEpilogue(product))
        epilogueOutputs[epilogue] = product.getDpsInits()[0];
    });
    if (fusion != tg::FusionMode::None)
      module.walk([&](linalg::TransposeOp transpose) {
        if (findHeadsOperand(transpose, inF32Tiles))
          doneInTiles.insert(transpose);
      });
    // A task's slice of a step buffer of at most 256 KiB that several of
    // the task's ops read or write is in its core's cache after the first:
    // one trip to memory per task.
    llvm::DenseSet<Value> taskSlices;
    auto countedInTask = [&](Operation *op, Value operand) {
      if (!isa<scf::ForallOp>(op->getParentOp()) ||
          !isa_and_nonnull<memref::SubViewOp>(operand.getDefiningOp()) ||
          tg::getValueBytes(operand) > kTaskCacheBytes)
        return false;
      return !taskSlices.insert(operand).second;
    };
    module.walk([&](Operation *op) {
      // Parallel tasks are one kernel (a pass over what they read and
      // write); the loop nests inside them are not.
      if (isa<scf::ForallOp>(op)) {
        int64_t n = repeats(op);
        counts->kernels += n;
        sourceOf(sourceIndex, op->getLoc(), op->getName().getStringRef())
            .kernels += n;
        return;
      }
      if (!isa<linalg::LinalgOp, memref::CopyOp>(op) ||
          op->getParentOfType<linalg::LinalgOp>() || doneInTiles.contains(op))
        return;
      auto epilogue = epilogueOutputs.find(op);
      auto instead = readsInstead.find(op);
      int64_t bytes = 0;
      for (Value operand : op->getOperands())
        if ((epilogue == epilogueOutputs.end() ||
             rootBuffer(operand) != epilogue->second) &&
            !taskLocal(operand) && !countedInTask(op, operand))
          bytes += tg::getValueBytes(instead != readsInstead.end() &&
                                             operand == instead->second.first
                                         ? instead->second.second
                                         : operand);
      int64_t n = repeats(op);
      int64_t kernels = epilogue == epilogueOutputs.end() &&
                                !op->getParentOfType<scf::ForallOp>()
                            ? n
                            : 0;
      counts->kernels += kernels;
      counts->bytesMoved += n * bytes;
      KernelSource &source =
          sourceOf(sourceIndex, op->getLoc(), op->getName().getStringRef());
      source.kernels += kernels;
      source.bytesMoved += n * bytes;
    });
  }

  /// The tally of `op` ops from the module named by `loc` (the first name in
  /// it; "" when it has none).
  KernelSource &sourceOf(llvm::StringMap<size_t> &index, Location loc,
                         StringRef op) {
    std::string module;
    loc->walk([&](Location inner) {
      if (auto name = dyn_cast<NameLoc>(inner)) {
        module = name.getName().str();
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    auto [it, added] =
        index.try_emplace(module + " " + op.str(), counts->bySource.size());
    if (added)
      counts->bySource.push_back({module, op.str(), 0, 0});
    return counts->bySource[it->second];
  }

  KernelCounts *counts;
  const TargetBackend &target;
  tg::FusionMode fusion;
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
          if (counts)
            nested.addPass(
                std::make_unique<CountKernelsPass>(counts, target, fusion));
          target.buildSchedulePipeline(nested, fusion);
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
  describeLora(summary, step, training, model);
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
          buildTGToLinalgPipeline(pm, kStepName, training.fusion,
                                  [&](OpPassManager &tiling) {
                                    target.buildTilingPipeline(
                                        tiling, training.fusion);
                                  });
        })))
      return failedCompile();
    return print([&](llvm::raw_ostream &os) { module.print(os); });
  }
  FailureOr<int64_t> arena = planTrainStep(module, target, training.fusion);
  if (failed(arena))
    return failedCompile();
  if (level == EmitLevel::GPU) {
    std::string refused;
    bool ran = succeeded(runPassPipeline(module, [&](OpPassManager &pm) {
      if (llvm::Error err = target.buildKernelPipeline(pm, kStepName))
        refused = llvm::toString(std::move(err));
    }));
    if (!refused.empty())
      return llvm::createStringError(request.input + ": " + refused);
    if (!ran)
      return failedCompile();
    return print([&](llvm::raw_ostream &os) { module.print(os); });
  }
  if (failed(runPassPipeline(module, [&](OpPassManager &pm) {
        target.buildCodegenPipeline(pm, kStepName);
      })))
    return failedCompile();
  summary.arenaBytes = *arena;
  if (level == EmitLevel::LLVMMLIR)
    return print([&](llvm::raw_ostream &os) { module.print(os); });
  if (level == EmitLevel::PTX) {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (llvm::Error err = target.emitDeviceAssembly(module, os))
      return llvm::createStringError(request.input + ": " +
                                     llvm::toString(std::move(err)));
    return print([&](llvm::raw_ostream &out) { out << text; });
  }

  return emitCode(module, level, request.input, request.output, target,
                  [&](llvm::StringRef object) {
                    return target.linkExecutable(
                        object, generateHeader(*buffers, summary),
                        generateModelInfo(*buffers, summary),
                        training.dataParallel, request.output);
                  });
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
