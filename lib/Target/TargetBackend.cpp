//===- TargetBackend.cpp - choosing a backend by --target -----------------===//

#include "tgc/Target/TargetBackend.h"
#include "tgc/Target/CPU/CPUBackend.h"

#include "llvm/ADT/StringSwitch.h"

using namespace tgc;

TargetBackend::~TargetBackend() = default;

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
  case TargetKind::CUDA:
    return llvm::createStringError(
        "--target=cuda: this tgc was built without the CUDA backend (NVIDIA "
        "GPUs through NVVM); use --target=cpu");
  }
  llvm_unreachable("unknown target kind");
}
