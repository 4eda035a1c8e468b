//===- InitAll.cpp - registration shared by every tgc tool ----------------===//

#include "tgc/InitAll.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Pipelines/Pipelines.h"
#include "tgc/Target/CPU/CPUBackend.h"
#include "tgc/Target/CUDA/CUDABackend.h"
#include "tgc/Transforms/Passes.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"

void tgc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::tg::TGDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::tg::registerCollectiveBufferization(registry);
}

void tgc::registerAllPasses() {
  mlir::registerAllPasses();
  mlir::tg::registerTGPasses();
  mlir::tg::registerTGConversionPasses();
  mlir::tg::registerTGCTransformsPasses();
  tgc::registerPipelines();
  tgc::cpu::registerCPUBackendPasses();
  tgc::cuda::registerCUDABackendPasses();
}
