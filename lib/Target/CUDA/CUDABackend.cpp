//===- CUDABackend.cpp - the CUDA target: pipeline and backend ------------===//

#include "tgc/Target/CUDA/CUDABackend.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Pipelines/Pipelines.h"
#include "tgc/Target/CUDA/Passes.h"
#include "tgc/Target/Host/HostCode.h"
#include "tgc/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"

using namespace mlir;
using namespace tgc;
using namespace tgc::cuda;

llvm::StringRef tgc::cuda::configuredToolkit() {
#ifdef TGC_CUDA_TOOLKIT
  return TGC_CUDA_TOOLKIT;
#else
  return "";
#endif
}

/// mma.sync.m16n8k16 on bf16/f16 needs sm_80 (Ampere) or later.
static bool hasBF16TensorCores(StringRef chip) {
  unsigned version = 0;
  return chip.consume_front("sm_") &&
         !chip.take_while(llvm::isDigit).getAsInteger(10, version) &&
         version >= 80;
}

void tgc::cuda::buildCUDASchedulePipeline(OpPassManager &pm,
                                          const CUDABackendOptions &options,
                                          bool launches) {
  pm.addNestedPass<func::FuncOp>(createTGCGPUPrepareKernelsPass());
  TGCGPUTileMatmulsPassOptions tiles;
  // Tensor cores for mixed precision's products; --gpu-emulate runs the
  // same fragments through an emulated multiply.
  if (hasBF16TensorCores(options.chip))
    tiles.mma = launches ? MMAKind::NVVM : MMAKind::Emulated;
  pm.addNestedPass<func::FuncOp>(createTGCGPUTileMatmulsPass(tiles));
  pm.addNestedPass<func::FuncOp>(createTGCGPUBlockReductionsPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  TGCGPUMapKernelsPassOptions map;
  map.threadsPerBlock = options.threadsPerBlock;
  map.deviceMemory = launches;
  pm.addNestedPass<func::FuncOp>(createTGCGPUMapKernelsPass(map));
  // Straight to gpu.launch: a canonicalisation of the mapped loops would
  // merge the block and thread loops into one.
  if (launches) {
    pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
    pm.addNestedPass<func::FuncOp>(createTGCGPULowerBlockProgramsPass());
  }
}

void tgc::cuda::buildCUDAKernelPipeline(OpPassManager &pm,
                                        const CUDABackendOptions &options) {
  // Every buffer is in the arena: nothing to free, and nothing that needs
  // the host between two launches.
  pm.addNestedPass<func::FuncOp>(createTGCGPUHoistArenaAllocsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerAffinePass());
  // Constants and index arithmetic go into the kernels, not through their
  // arguments: the kernels' accumulator indices must be constants there.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createTGCGPUMergeKernelModulesPass());
  // Launches chained on one stream, waited for at the end of the step.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void tgc::cuda::buildCUDACodegenPipeline(OpPassManager &pm,
                                         const CUDABackendOptions &options) {
  buildCUDAKernelPipeline(pm, options);
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(tg::createTGCLowerArenaAllocsPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  // The host program, as on the CPU.
  host::buildHostToLLVMPipeline(pm, host::HostToLLVMOptions());
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.toolkit;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createReconcileUnrealizedCastsPass());
  tg::TGCEmitCEntryPassOptions entry;
  entry.functions = {options.function};
  pm.addPass(tg::createTGCEmitCEntryPass(entry));
}

void tgc::cuda::buildCUDATilingPipeline(OpPassManager &pm,
                                        tg::FusionMode fusion) {
  // Without fusion attention is untiled; expert products still need
  // static chunks.
  TGCGPUChooseTilesPassOptions tiles;
  if (fusion == tg::FusionMode::None)
    tiles.scoreTileBytes = 0;
  pm.addPass(createTGCGPUChooseTilesPass(tiles));
}

void tgc::cuda::registerCUDABackendPasses() {
  registerTGCUDAPasses();
  PassPipelineRegistration<CUDABackendOptions>(
      "tgc-cuda-lowering",
      "@train_step in tg → LLVM dialect with NVVM kernels serialised for the "
      "GPU (tg → linalg, then the CUDA backend)",
      [](OpPassManager &pm, const CUDABackendOptions &options) {
        buildTGToLinalgPipeline(
            pm, options.function, options.fusion, [&](OpPassManager &tiling) {
              buildCUDATilingPipeline(tiling, options.fusion);
            });
        buildBufferizePipeline(pm, [&](OpPassManager &nested) {
          buildCUDASchedulePipeline(nested, options);
        });
        buildCUDACodegenPipeline(pm, options);
      });
}

namespace {

/// --target=cuda: PTX kernels for --gpu-arch, launched from host code
/// linked with the CUDA runtime. With --gpu-emulate the same kernel
/// schedule runs on the host CPU (the CPU backend's codegen and link).
class CUDABackend final : public TargetBackend {
public:
  CUDABackend(const TargetOptions &target,
              std::unique_ptr<TargetBackend> hostBackend)
      : target(target), hostBackend(std::move(hostBackend)) {
    options.chip = target.gpuArch;
    options.toolkit = configuredToolkit().str();
    if (const char *env = std::getenv("TGC_CUDA_TOOLKIT"))
      options.toolkit = env;
  }

  StringRef getName() const override { return "cuda"; }

  llvm::Error checkTrainStep(func::FuncOp step) const override {
    bool collectives = false;
    step.walk([&](tg::CollectiveWaitOp) { collectives = true; });
    if (collectives)
      return llvm::createStringError(
          "--data-parallel: the CUDA target has no collectives yet (NCCL is "
          "the next step, docs/distributed.md); use the CPU target");
    return checkF32Parameters(step, "CUDA");
  }

  void buildTilingPipeline(OpPassManager &pm,
                           tg::FusionMode fusion) const override {
    buildCUDATilingPipeline(pm, fusion);
  }

  void buildSchedulePipeline(OpPassManager &pm, tg::FusionMode) const override {
    buildCUDASchedulePipeline(pm, options, /*launches=*/!target.gpuEmulate);
  }

  void buildCodegenPipeline(OpPassManager &pm,
                            StringRef function) const override {
    if (target.gpuEmulate)
      return hostBackend->buildCodegenPipeline(pm, function);
    CUDABackendOptions withFunction;
    withFunction.function = function.str();
    withFunction.chip = options.chip.getValue();
    withFunction.toolkit = options.toolkit.getValue();
    buildCUDACodegenPipeline(pm, withFunction);
  }

  llvm::Error buildKernelPipeline(OpPassManager &pm,
                                  StringRef function) const override {
    if (target.gpuEmulate)
      return llvm::createStringError(
          "--emit=gpu: --gpu-emulate compiles no GPU kernels");
    buildCUDAKernelPipeline(pm, options);
    return llvm::Error::success();
  }

  llvm::Error emitDeviceAssembly(ModuleOp module,
                                 llvm::raw_ostream &os) const override;

  void registerTranslations(DialectRegistry &registry) const override {
    hostBackend->registerTranslations(registry);
    registerGPUDialectTranslation(registry);
    registerNVVMDialectTranslation(registry);
    gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  }

  llvm::Error emit(ModuleOp module, CodeArtifact artifact,
                   llvm::raw_pwrite_stream &os) const override {
    if (target.gpuEmulate)
      return hostBackend->emit(module, artifact, os);
    // The kernels are already serialised into the module (gpu.binary); what
    // is left is host code that launches them: one long function of
    // argument stores, where the SLP vectorizer's search only costs time.
    return host::emitHostCode(module, artifact, target.cpu,
                              /*slpVectorize=*/false, os);
  }

  llvm::Error linkExecutable(StringRef objectFile, StringRef header,
                             StringRef modelInfo, bool collectives,
                             StringRef output) const override;

private:
  TargetOptions target;
  /// The host CPU's backend: --gpu-emulate runs the kernel schedule on it.
  std::unique_ptr<TargetBackend> hostBackend;
  CUDABackendOptions options;
};

} // namespace

llvm::Error CUDABackend::emitDeviceAssembly(ModuleOp module,
                                            llvm::raw_ostream &os) const {
  if (target.gpuEmulate)
    return llvm::createStringError(
        "--emit=ptx: --gpu-emulate compiles no GPU kernels");
  if (options.format.getValue() != "isa")
    return llvm::createStringError("--emit=ptx needs PTX kernels");
  bool found = false;
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects()) {
      auto gpuObject = dyn_cast<gpu::ObjectAttr>(object);
      if (!gpuObject)
        continue;
      os << "// gpu.module @" << binary.getSymName() << "\n"
         << gpuObject.getObject().getValue();
      found = true;
    }
  });
  if (!found)
    return llvm::createStringError("--emit=ptx: the step has no kernels");
  return llvm::Error::success();
}

llvm::Error CUDABackend::linkExecutable(StringRef objectFile, StringRef header,
                                        StringRef modelInfo, bool collectives,
                                        StringRef output) const {
  if (collectives)
    return llvm::createStringError(
        "--data-parallel: the CUDA target has no collectives yet (NCCL is "
        "the next step, docs/distributed.md); use the CPU target");
  if (target.gpuEmulate)
    return hostBackend->linkExecutable(objectFile, header, modelInfo, false,
                                       output);
  // The CUDA runtime (mgpu*, the device arena and buffers) replaces the
  // host's definitions in libtgc_runtime.a: it comes first, whole.
  SmallString<128> cudaRuntime(
      llvm::sys::path::parent_path(target.runtimeLibrary));
  llvm::sys::path::append(cudaRuntime, "libtgc_runtime_cuda.a");
  if (!llvm::sys::fs::exists(cudaRuntime))
    return llvm::createStringError("the tgc CUDA runtime library is missing: " +
                                   cudaRuntime.str().str());
  if (!llvm::sys::fs::exists(target.runtimeLibrary))
    return llvm::createStringError("the tgc runtime library is missing: " +
                                   target.runtimeLibrary);
  // libcuda.so.1 comes from the driver at run time; the toolkit's stub is
  // for the link only (never on the rpath).
  std::string stubs = "-L" + options.toolkit.getValue() + "/lib64/stubs";
  return host::linkHostExecutable(
      objectFile, header, modelInfo,
      {"-Wl,--whole-archive", cudaRuntime.str().str(), "-Wl,--no-whole-archive",
       target.runtimeLibrary, stubs, "-lcuda", "-lomp"},
      output);
}

llvm::Expected<std::unique_ptr<TargetBackend>>
tgc::cuda::createCUDABackend(const TargetOptions &options,
                             std::unique_ptr<TargetBackend> hostBackend) {
  if (!llvm::StringRef(options.gpuArch).starts_with("sm_"))
    return llvm::createStringError("--gpu-arch: expected an NVIDIA "
                                   "architecture such as sm_90, got '" +
                                   options.gpuArch + "'");
  if (!options.gpuEmulate && configuredToolkit().empty() &&
      !std::getenv("TGC_CUDA_TOOLKIT"))
    return llvm::createStringError(
        "--target=cuda: this tgc was built without the CUDA toolkit (needed "
        "for libdevice and the GPU runtime); rebuild with the toolkit in "
        "/usr/local/cuda or -DTGC_CUDA_TOOLKIT=<dir>, or use --target=cpu");
  // NVPTX code generation (gpu-module-to-binary).
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  return std::make_unique<CUDABackend>(options, std::move(hostBackend));
}
