//===- Launches.cpp - launches and kernel modules -------------------------===//
//
// tgc-gpu-hoist-arena-allocs and tgc-gpu-merge-kernel-modules: see their
// descriptions in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "HostReads.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Target/CUDA/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace tgc::cuda {
#define GEN_PASS_DEF_TGCGPUHOISTARENAALLOCSPASS
#define GEN_PASS_DEF_TGCGPUMERGEKERNELMODULESPASS
#include "tgc/Target/CUDA/Passes.h.inc"
} // namespace tgc::cuda

using namespace mlir;

namespace {

struct TGCGPUHoistArenaAllocsPass
    : tgc::cuda::impl::TGCGPUHoistArenaAllocsPassBase<
          TGCGPUHoistArenaAllocsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Block &entry = func.getBody().front();
    SmallVector<memref::AllocOp> allocs;
    func.walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
    for (memref::AllocOp alloc : allocs) {
      if (!alloc->hasAttr(tg::kArenaOffsetAttrName) ||
          alloc->getNumOperands()) {
        alloc.emitError("tgc-gpu-hoist-arena-allocs: a buffer outside the "
                        "planned arena (the GPU program has no heap)");
        return signalPassFailure();
      }
      alloc->moveBefore(&entry, entry.begin());
    }
    WalkResult hostAccess = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (isa<scf::ParallelOp, memref::LoadOp, memref::StoreOp,
              linalg::LinalgOp, memref::CopyOp>(op) &&
          !tgc::cuda::isHostCopyAccess(op)) {
        op->emitError("tgc-gpu-hoist-arena-allocs: '")
            << op->getName()
            << "' outside a kernel would touch device memory on the host";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (hostAccess.wasInterrupted())
      signalPassFailure();
  }
};

struct TGCGPUMergeKernelModulesPass
    : tgc::cuda::impl::TGCGPUMergeKernelModulesPassBase<
          TGCGPUMergeKernelModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernelModules(
        module.getOps<gpu::GPUModuleOp>());
    if (kernelModules.size() < 2)
      return;
    gpu::GPUModuleOp merged = kernelModules.front();
    SymbolTable mergedSymbols(merged);
    // Where each kernel went: (old module, old kernel) → new kernel name.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> moved;
    for (gpu::GPUModuleOp from : kernelModules) {
      for (Operation &op : llvm::make_early_inc_range(from.getOps())) {
        auto symbol = dyn_cast<SymbolOpInterface>(op);
        if (!symbol)
          continue;
        StringAttr oldName = symbol.getNameAttr();
        if (auto kernel = dyn_cast<gpu::GPUFuncOp>(op)) {
          StringAttr newName = from.getSymNameAttr();
          moved[{from.getSymNameAttr(), oldName}] = newName;
          if (from == merged) {
            mergedSymbols.remove(kernel);
            SymbolTable::setSymbolName(kernel, newName);
            mergedSymbols.insert(kernel);
            continue;
          }
          op.remove();
          SymbolTable::setSymbolName(kernel, newName);
          mergedSymbols.insert(&op);
          continue;
        }
        if (from == merged)
          continue;
        // Globals the kernels share (clones of one host global) are kept
        // once; anything else of the same name is a conflict.
        if (Operation *existing = mergedSymbols.lookup(oldName)) {
          if (!OperationEquivalence::isEquivalentTo(
                  existing, &op, OperationEquivalence::ignoreValueEquivalence,
                  nullptr, OperationEquivalence::IgnoreLocations)) {
            op.emitError("tgc-gpu-merge-kernel-modules: two kernel modules "
                         "define different '")
                << oldName.getValue() << "'";
            return signalPassFailure();
          }
          op.erase();
          continue;
        }
        op.remove();
        mergedSymbols.insert(&op);
      }
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it =
          moved.find({launch.getKernelModuleName(), launch.getKernelName()});
      if (it == moved.end())
        return;
      launch.setKernelAttr(SymbolRefAttr::get(
          merged.getSymNameAttr(), {FlatSymbolRefAttr::get(it->second)}));
    });
    for (gpu::GPUModuleOp from : llvm::drop_begin(kernelModules))
      from.erase();
  }
};

} // namespace
