//===- Compile.h - from a tg module to each --emit level --------*- C++ -*-===//
//
// The driver's stages, shared by `tgc` and `tgc stats`: the training graph
// (tg), the target-neutral lowering to linalg and bufferization, and the
// target backend for everything after that. Nothing here knows which target
// it drives.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DRIVER_COMPILE_H
#define TGC_DRIVER_COMPILE_H

#include "tgc/Frontend/ModelConfig.h"
#include "tgc/Target/KernelCount.h"
#include "tgc/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace tgc {

/// Output levels, in pipeline order: each is a longer prefix of one pipeline.
enum class EmitLevel {
  TG,
  Grad,
  Header,
  Linalg,
  GPU, // kernels and launches (GPU targets)
  LLVMMLIR,
  PTX, // the kernels' device assembly (GPU targets)
  LLVM,
  Asm,
  Obj,
  Exe
};

/// Adds @train_step (reverse graph, optimizer update, remat) beside @forward.
/// With `returnGradients` the step also returns the gradients (for the
/// executable's --dump-grads). Without `lowPrecisionSaves` a mixed-precision
/// step keeps its saved activations as they are (the remat sweep's base).
mlir::LogicalResult buildTrainStep(mlir::ModuleOp module,
                                   const TrainingConfig &training,
                                   bool returnGradients,
                                   bool lowPrecisionSaves = true);

/// Lowers tg @train_step to a bufferized step whose intermediates are planned
/// into one arena (the module attribute tgc.arena_bytes), running the
/// target's schedule before the planner. Returns the arena's size; fills
/// `counts` if given (read off the scheduled step, tgc/Target/KernelCount.h).
mlir::FailureOr<int64_t> planTrainStep(mlir::ModuleOp module,
                                       const TargetBackend &target,
                                       mlir::tg::FusionMode fusion,
                                       KernelCounts *counts = nullptr);

/// Runs the passes `build` adds on `module`, honouring --mlir-print-ir-*
/// and --mlir-timing.
mlir::LogicalResult
runPassPipeline(mlir::ModuleOp module,
                llvm::function_ref<void(mlir::OpPassManager &)> build);

/// Emits the LLVM-dialect `module` at `level` (llvm, asm, obj: to
/// `output`); for exe, an object in a temporary file that `link` turns
/// into the executable. The target's and the link's errors name `input`.
llvm::Error emitCode(mlir::ModuleOp module, EmitLevel level,
                     llvm::StringRef input, llvm::StringRef output,
                     const TargetBackend &target,
                     llvm::function_ref<llvm::Error(llvm::StringRef)> link);

/// --emit=gpu: runs the target's kernel pipeline (`function` is the
/// program's entry step) on the bufferized, scheduled `module` and prints
/// it to `output`. Errors name `input`.
llvm::Error emitKernels(mlir::ModuleOp module, const TargetBackend &target,
                        llvm::StringRef function, llvm::StringRef input,
                        llvm::StringRef output);

/// --emit=ptx: the device assembly of the code-generated `module`, to
/// `output`. Errors name `input`.
llvm::Error emitDeviceAssembly(mlir::ModuleOp module,
                               const TargetBackend &target,
                               llvm::StringRef input, llvm::StringRef output);

/// Writes a file ("-": stdout) through `write`; the error names the path.
llvm::Error
writeOutputFile(llvm::StringRef path,
                llvm::function_ref<void(llvm::raw_ostream &)> write);

/// Where compile() reads from and writes to.
struct CompileRequest {
  std::string input;        // the model file, for messages
  std::string output = "-"; // "-": stdout (not for executables)
  EmitLevel level = EmitLevel::TG;
  /// The compiled step also returns every gradient (for --dump-grads).
  bool returnGradients = false;
};

/// Produces `request.level` from a module holding @forward, through `target`.
/// `model` is null for tg IR input.
llvm::Error compile(mlir::ModuleOp module, const CompileRequest &request,
                    const TrainingConfig &training, const ModelConfig *model,
                    const TargetBackend &target);

} // namespace tgc

#endif // TGC_DRIVER_COMPILE_H
