//===- CPUBackend.cpp - the CPU target: pipeline and backend --------------===//

#include "tgc/Target/CPU/CPUBackend.h"
#include "BF16Products.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Pipelines/Pipelines.h"
#include "tgc/Target/CPU/Passes.h"
#include "tgc/Target/Host/HostCode.h"
#include "tgc/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace tgc;
using namespace tgc::cpu;

void CPUBackendOptions::setCPU(const CPUDescription &cpu) {
  vectorBits = cpu.vectorBits;
  vectorRegisters = cpu.vectorRegisters;
  l1CacheBytes = cpu.l1CacheBytes;
  l2CacheBytes = cpu.l2CacheBytes;
  amx = cpu.amx;
  // vdpbf16ps on 512-bit vectors (the register tiles are built of them).
  bf16Dot = cpu.avx512bf16 && cpu.vectorBits == 512;
  threads = cpu.threads;
}

void tgc::cpu::buildCPUTilingPipeline(OpPassManager &pm,
                                      tg::FusionMode fusion) {
  // Without fusion attention and the norms are untiled (each op its own
  // passes over memory); expert products still need static chunks.
  TGCCPUChooseTilesPassOptions tiles;
  if (fusion == tg::FusionMode::None)
    tiles.scoreTileBytes = tiles.taskBytes = 0;
  pm.addPass(createTGCCPUChooseTilesPass(tiles));
}

void tgc::cpu::buildCPUSchedulePipeline(OpPassManager &pm,
                                        const CPUBackendOptions &options,
                                        tg::FusionMode fusion) {
  // Matmuls of any shape: parallel output tiles, K and register tiles sized
  // for the target CPU, vector FMAs. Before the arena: hoisting the
  // accumulators out of the reduction loop needs buffers that are visibly
  // distinct allocations.
  VectorizeMatmulsOptions matmuls;
  matmuls.vectorBits = options.vectorBits;
  matmuls.vectorRegisters = options.vectorRegisters;
  matmuls.l1CacheBytes = options.l1CacheBytes;
  matmuls.l2CacheBytes = options.l2CacheBytes;
  matmuls.tiles = llvm::to_vector(options.matmulTiles);
  matmuls.amx = options.amx;
  matmuls.bf16Dot = options.bf16Dot;
  matmuls.threads = options.threads;
  // Zeroing an output inside its tiles fuses the fill into the product.
  matmuls.fillTiles = fusion != tg::FusionMode::None;
  buildVectorizeMatmulsPipeline(pm, matmuls);
  // The transposed copies the products still read, in register blocks.
  pm.addPass(createTGCVectorizeTransposesPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Large elementwise and reduction ops: parallel chunks too.
  pm.addPass(createTGCParallelizeLoopsPass());
  pm.addPass(createForallToParallelLoopPass());
  // Row sums and norms in vector lanes.
  pm.addPass(createTGCReassociateReductionsPass());
}

void tgc::cpu::buildCPUCodegenPipeline(OpPassManager &pm,
                                       const CPUBackendOptions &options) {
  // What the arena does not hold (buffers inside loops) is freed by the
  // deallocation pipeline.
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createCanonicalizerPass());
  VectorTransferToSCFOptions vectorToSCF;
  vectorToSCF.enableFullUnroll(true);
  pm.addPass(createConvertVectorToSCFPass(vectorToSCF));
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // Arithmetic instead of scalar libm calls: the loops vectorise.
  pm.addPass(createTGCExpandMathPass());
  // One function per loop nest keeps LLVM's loop passes linear.
  pm.addPass(createTGCOutlineLoopNestsPass());
  // The matmuls' output tiles (scf.parallel) run on OpenMP threads
  // (OMP_NUM_THREADS).
  pm.addPass(createConvertSCFToOpenMPPass());
  // Inlines the alloca scopes it adds (nothing is stack-allocated in them):
  // scf-to-cf cannot leave multi-block regions inside one.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  ConvertVectorToLLVMPassOptions vectorToLLVM;
  vectorToLLVM.amx = true;       // amx tile ops (bf16 products)
  vectorToLLVM.x86Vector = true; // avx512.dot (bf16 products)
  pm.addPass(createConvertVectorToLLVMPass(vectorToLLVM));
  pm.addPass(tg::createTGCLowerArenaAllocsPass());
  // aligned_alloc rather than malloc plus pointer arithmetic: LLVM then
  // knows a task's own buffers alias nothing else, and keeps a row sum's
  // accumulator in a register instead of storing it on every element.
  host::HostToLLVMOptions toLLVM;
  toLLVM.alignedAlloc = true;
  toLLVM.mathToLibm = true;
  host::buildHostToLLVMPipeline(pm, toLLVM);
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  // bf16 bits stored and loaded as i16, which LLVM vectorises on any x86.
  pm.addPass(createTGCNarrowFloatBitsPass());
  tg::TGCEmitCEntryPassOptions entry;
  entry.functions = {options.function};
  pm.addPass(tg::createTGCEmitCEntryPass(entry));
}

void tgc::cpu::buildCPUBackendPipeline(OpPassManager &pm,
                                       const CPUBackendOptions &options) {
  buildBufferizePipeline(pm, [&](OpPassManager &nested) {
    buildCPUSchedulePipeline(nested, options, options.fusion);
  });
  buildCPUCodegenPipeline(pm, options);
}

void tgc::cpu::registerCPUBackendPasses() {
  registerTGCPUPasses();
  PassPipelineRegistration<VectorizeMatmulsOptions>(
      "tgc-vectorize-matmuls",
      "Tiles and vectorises every bufferized matmul for the CPU, any shape "
      "(the tgc-cpu-* matmul passes in order)",
      buildVectorizeMatmulsPipeline);
  PassPipelineRegistration<CPUBackendOptions>(
      "tgc-cpu-lowering",
      "@train_step in tg → LLVM dialect for the CPU with the C entry point "
      "(tg → linalg, then the CPU backend)",
      [](OpPassManager &pm, const CPUBackendOptions &options) {
        buildTGToLinalgPipeline(
            pm, options.function, options.fusion, [&](OpPassManager &tiling) {
              buildCPUTilingPipeline(tiling, options.fusion);
            });
        buildCPUBackendPipeline(pm, options);
      });
}

namespace {

/// --target=cpu: the host (or --mcpu) CPU, OpenMP threads, clang++ links.
class CPUBackend final : public TargetBackend {
public:
  CPUBackend(const TargetOptions &target, CPUDescription cpu)
      : target(target), cpu(std::move(cpu)) {
    options.setCPU(this->cpu);
    options.matmulTiles = target.matmulTiles;
  }

  StringRef getName() const override { return "cpu"; }

  llvm::Error checkTrainStep(func::FuncOp step) const override {
    // Parameters are f32 (bf16 arithmetic is --precision=bf16-mixed, with
    // f32 masters).
    return checkF32Parameters(step, "CPU");
  }

  void buildSchedulePipeline(OpPassManager &pm,
                             tg::FusionMode fusion) const override {
    buildCPUSchedulePipeline(pm, options, fusion);
  }

  double estimatedComputeRate() const override {
    return cpu::estimateStepGflops(cpu);
  }

  void buildTilingPipeline(OpPassManager &pm,
                           tg::FusionMode fusion) const override {
    buildCPUTilingPipeline(pm, fusion);
  }

  void buildCodegenPipeline(OpPassManager &pm,
                            StringRef function) const override {
    CPUBackendOptions withFunction;
    withFunction.function = function.str();
    buildCPUCodegenPipeline(pm, withFunction);
  }

  void registerTranslations(DialectRegistry &registry) const override {
    host::registerHostTranslations(registry);
  }

  llvm::Error emit(ModuleOp module, CodeArtifact artifact,
                   llvm::raw_pwrite_stream &os) const override {
    return host::emitHostCode(module, artifact, cpu.name, /*slpVectorize=*/true,
                              os);
  }

  llvm::Error linkExecutable(StringRef objectFile, StringRef header,
                             StringRef modelInfo, bool collectives,
                             StringRef output) const override;

private:
  TargetOptions target;
  CPUDescription cpu;
  CPUBackendOptions options;
};

} // namespace

llvm::Error CPUBackend::linkExecutable(StringRef objectFile, StringRef header,
                                       StringRef modelInfo, bool collectives,
                                       StringRef output) const {
  StringRef runtime = target.runtimeLibrary;
  if (!llvm::sys::fs::exists(runtime))
    return llvm::createStringError("the tgc runtime library is missing: " +
                                   runtime.str());
  std::vector<std::string> libraries;
  if (collectives) {
    // The MPI runtime (lib/Runtime/MPI) replaces the single-process
    // collectives of libtgc_runtime.a: linked first, whole.
#ifdef TGC_MPI_LIBRARIES
    llvm::SmallString<128> mpiRuntime(llvm::sys::path::parent_path(runtime));
    llvm::sys::path::append(mpiRuntime, "libtgc_runtime_mpi.a");
    if (!llvm::sys::fs::exists(mpiRuntime))
      return llvm::createStringError(
          "the tgc MPI runtime library is missing: " + mpiRuntime.str().str());
    libraries = {"-Wl,--whole-archive", mpiRuntime.str().str(),
                 "-Wl,--no-whole-archive"};
    llvm::SmallVector<StringRef> mpi;
    StringRef(TGC_MPI_LIBRARIES).split(mpi, ';', -1, false);
    for (StringRef library : mpi)
      libraries.push_back(library.str());
#else
    return llvm::createStringError(
        "--data-parallel: this tgc was built without MPI (install Open MPI, "
        "libopenmpi-dev, and rebuild: scripts/install-deps.sh does both)");
#endif
  }
  libraries.push_back(runtime.str());
  libraries.push_back("-lomp");
  return host::linkHostExecutable(objectFile, header, modelInfo, libraries,
                                  output);
}

llvm::Expected<std::unique_ptr<TargetBackend>>
tgc::cpu::createCPUBackend(const TargetOptions &options) {
  std::string error;
  std::optional<CPUDescription> cpu = describeCPU(options.cpu, error);
  if (!cpu)
    return llvm::createStringError(error);
  return std::make_unique<CPUBackend>(options, std::move(*cpu));
}
