//===- TargetBackend.cpp - choosing a backend by --target -----------------===//

#include "tgc/Target/TargetBackend.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Target/CPU/CPUBackend.h"
#include "tgc/Target/CUDA/CUDABackend.h"

#include "llvm/ADT/StringSwitch.h"

using namespace tgc;

TargetBackend::~TargetBackend() = default;

double TargetBackend::estimatedComputeRate() const { return 0; }

void TargetBackend::buildTilingPipeline(mlir::OpPassManager &,
                                        mlir::tg::FusionMode) const {}

llvm::Error TargetBackend::buildKernelPipeline(mlir::OpPassManager &,
                                               llvm::StringRef) const {
  return llvm::createStringError("--emit=gpu: the " + getName().str() +
                                 " target has no GPU kernels (use "
                                 "--target=cuda)");
}

llvm::Error TargetBackend::emitDeviceAssembly(mlir::ModuleOp,
                                              llvm::raw_ostream &) const {
  return llvm::createStringError("--emit=ptx: the " + getName().str() +
                                 " target has no GPU kernels (use "
                                 "--target=cuda)");
}

llvm::Error tgc::checkF32Parameters(mlir::func::FuncOp step,
                                    llvm::StringRef targetName) {
  for (mlir::BlockArgument arg : step.getArguments()) {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(arg.getType());
    auto name = step.getArgAttrOfType<mlir::StringAttr>(
        arg.getArgNumber(), mlir::tg::TGDialect::kParamAttrName);
    if (!name || !type || type.getElementType().isF32())
      continue;
    // Frozen weights may be stored narrower (tg-narrow-frozen): only
    // products read them, on bf16/f16 operands.
    if (step.getArgAttr(arg.getArgNumber(),
                        mlir::tg::TGDialect::kFrozenAttrName) &&
        (type.getElementType().isBF16() || type.getElementType().isF16()))
      continue;
    return llvm::createStringError("the " + targetName.str() +
                                   " target compiles f32 models only "
                                   "(parameter '" +
                                   name.getValue().str() +
                                   "' is not f32); use "
                                   "--dtype=f32 (with --precision=bf16-mixed "
                                   "for bf16 products)");
  }
  return llvm::Error::success();
}

std::optional<TargetKind> tgc::parseTargetKind(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<TargetKind>>(name)
      .Case("cpu", TargetKind::CPU)
      .Case("cuda", TargetKind::CUDA)
      .Default(std::nullopt);
}

llvm::StringRef tgc::stringifyTargetKind(TargetKind kind) {
  switch (kind) {
  case TargetKind::CPU:
    return "cpu";
  case TargetKind::CUDA:
    return "cuda";
  }
  llvm_unreachable("unknown target kind");
}

llvm::Expected<std::unique_ptr<TargetBackend>>
tgc::createTargetBackend(TargetKind kind, const TargetOptions &options) {
  switch (kind) {
  case TargetKind::CPU:
    return cpu::createCPUBackend(options);
  case TargetKind::CUDA: {
    // The CUDA step's host side, and all of it under --gpu-emulate.
    llvm::Expected<std::unique_ptr<TargetBackend>> host =
        cpu::createCPUBackend(options);
    if (!host)
      return host.takeError();
    return cuda::createCUDABackend(options, std::move(*host));
  }
  }
  llvm_unreachable("unknown target kind");
}
