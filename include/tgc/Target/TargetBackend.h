//===- TargetBackend.h - one code generation target -------------*- C++ -*-===//
//
// Everything target-specific about compiling a train step sits behind this
// interface, in the style of IREE's TargetBackend and Triton's per-target
// backends: the driver lowers tg → linalg and bufferizes without knowing the
// target, then asks the backend for its schedule (run before the shared
// arena planner), its lowering to the LLVM dialect, code emission and the
// link. Backends live in lib/Target/<Name>/.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TARGET_TARGETBACKEND_H
#define TGC_TARGET_TARGETBACKEND_H

#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tgc {

/// The targets tgc knows (--target). A known target may be left out of a
/// build (e.g. CUDA without the toolkit).
enum class TargetKind { CPU, CUDA };

std::optional<TargetKind> parseTargetKind(llvm::StringRef name);
llvm::StringRef stringifyTargetKind(TargetKind kind);

/// What a backend writes after its lowering to the LLVM dialect.
enum class CodeArtifact { LLVMIR, Assembly, Object };

/// Settings every backend reads (each ignores what does not apply to it).
struct TargetOptions {
  /// Host CPU: "native" or an LLVM CPU name (--mcpu).
  std::string cpu = "native";
  /// Matmul tile override MT, NT, KT, MR, NR (--matmul-tiles); empty: the
  /// target's tile model.
  std::vector<int64_t> matmulTiles;
  /// The runtime archive linked into executables (libtgc_runtime.a); a
  /// GPU backend finds its own runtime beside it.
  std::string runtimeLibrary;
  /// GPU architecture (--gpu-arch), e.g. sm_90.
  std::string gpuArch = "sm_90";
  /// Run the GPU schedule on the host CPU instead (--gpu-emulate).
  bool gpuEmulate = false;
};

class TargetBackend {
public:
  virtual ~TargetBackend();

  /// The --target spelling ("cpu").
  virtual llvm::StringRef getName() const = 0;

  /// Rejects a tg train step (after tg-optimizer) this target cannot compile,
  /// e.g. element types it has no code for; the message names the buffer.
  virtual llvm::Error checkTrainStep(mlir::func::FuncOp trainStep) const = 0;

  /// The target's schedule on bufferized linalg (results already
  /// out-parameters). Runs before the shared arena planner, so buffers the
  /// schedule introduces are planned too. `fusion` none: no fusion in the
  /// schedule either (e.g. of a product's output zeroing into its tiles).
  virtual void buildSchedulePipeline(mlir::OpPassManager &pm,
                                     mlir::tg::FusionMode fusion) const = 0;

  /// GFLOP/s one process of this target sustains on a training step: the
  /// time model of planners such as ZeRO-3's prefetch
  /// (tgc/Dialect/TG/Analysis/GatherPrefetch.h). 0: no estimate.
  virtual double estimatedComputeRate() const;

  /// On tg, right before convert-tg-to-linalg: the target's tiles of the
  /// neutral ops (attention, norms, expert products), as `tg.tiling`
  /// attributes (TGAttrs.td). `fusion` none: attention and the norms
  /// untiled. Nothing by default (every op untiled).
  virtual void buildTilingPipeline(mlir::OpPassManager &pm,
                                   mlir::tg::FusionMode fusion) const;
  /// After the arena plan: everything down to the LLVM dialect, with the C
  /// entry point `tgc_<function>(void **buffers)`.
  virtual void buildCodegenPipeline(mlir::OpPassManager &pm,
                                    llvm::StringRef function) const = 0;

  /// Registers the LLVM IR translations codegen output needs.
  virtual void registerTranslations(mlir::DialectRegistry &registry) const = 0;

  /// Translates the LLVM-dialect module and writes `artifact` to `os`.
  virtual llvm::Error emit(mlir::ModuleOp module, CodeArtifact artifact,
                           llvm::raw_pwrite_stream &os) const = 0;

  /// --emit=gpu: after the arena plan, the host program launching outlined
  /// kernels. Targets without kernels refuse.
  virtual llvm::Error buildKernelPipeline(mlir::OpPassManager &pm,
                                          llvm::StringRef function) const;

  /// --emit=ptx: the kernels' device assembly, read from the module that
  /// buildCodegenPipeline produced. Targets without kernels refuse.
  virtual llvm::Error emitDeviceAssembly(mlir::ModuleOp module,
                                         llvm::raw_ostream &os) const;

  /// Links an object file from emit() with the runtime into an executable.
  /// `header` (train_step.h) and `modelInfo` (C source defining tgc_model)
  /// describe the step's buffers to the runtime. With `collectives` the
  /// step calls the runtime's collectives (tgc --data-parallel): the
  /// executable links the MPI runtime.
  virtual llvm::Error linkExecutable(llvm::StringRef objectFile,
                                     llvm::StringRef header,
                                     llvm::StringRef modelInfo,
                                     bool collectives,
                                     llvm::StringRef output) const = 0;
};

/// Refuses a step whose parameters are not f32, naming the first one (for
/// backends without low-precision arithmetic).
llvm::Error checkF32Parameters(mlir::func::FuncOp step,
                               llvm::StringRef targetName);

/// The backend for `kind`; an error if it was not built into this tgc or
/// `options` do not suit it (e.g. an unknown --mcpu).
llvm::Expected<std::unique_ptr<TargetBackend>>
createTargetBackend(TargetKind kind, const TargetOptions &options);

} // namespace tgc

#endif // TGC_TARGET_TARGETBACKEND_H
