//===- LowerBlockPrograms.cpp - block programs to gpu.launch --------------===//
//
// tgc-gpu-lower-block-programs: see its description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CUDA/Passes.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

namespace tgc::cuda {
#define GEN_PASS_DEF_TGCGPULOWERBLOCKPROGRAMSPASS
#include "tgc/Target/CUDA/Passes.h.inc"
} // namespace tgc::cuda

using namespace mlir;
using namespace tgc::cuda;

namespace {

struct TGCGPULowerBlockProgramsPass
    : tgc::cuda::impl::TGCGPULowerBlockProgramsPassBase<
          TGCGPULowerBlockProgramsPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> programs;
    getOperation().walk([&](scf::ParallelOp op) {
      if (op->hasAttr(kBlockProgramAttrName))
        programs.push_back(op);
    });
    for (scf::ParallelOp program : programs)
      if (failed(lower(program)))
        return signalPassFailure();
  }

  LogicalResult lower(scf::ParallelOp grid) {
    MLIRContext *context = grid.getContext();
    Location loc = grid.getLoc();
    Block *body = grid.getBody();
    SmallVector<scf::ParallelOp> phases;
    SmallVector<memref::AllocaOp> shared, perThread;
    for (Operation &op : *body) {
      if (auto alloca = dyn_cast<memref::AllocaOp>(op)) {
        if (alloca->hasAttr(kSharedAttrName))
          shared.push_back(alloca);
        else if (alloca->hasAttr(kPerThreadAttrName))
          perThread.push_back(alloca);
      }
    }
    grid.walk([&](scf::ParallelOp op) {
      if (op->hasAttr(kPhaseAttrName))
        phases.push_back(op);
    });
    std::optional<int64_t> threads;
    for (scf::ParallelOp p : phases) {
      std::optional<int64_t> n = getConstantIntValue(p.getUpperBound()[0]);
      if (p.getNumLoops() != 1 || !n ||
          !isConstantIntValue(p.getLowerBound()[0], 0) ||
          !isConstantIntValue(p.getStep()[0], 1) || (threads && *threads != *n))
        return p.emitError("tgc-gpu-lower-block-programs: phases must run "
                           "over the same threads 0..T");
      threads = n;
    }
    if (!threads || grid.getNumLoops() != 3)
      return grid.emitError("tgc-gpu-lower-block-programs: a block program "
                            "needs a 3-d grid and at least one phase");

    auto space = [&](gpu::AddressSpace s) {
      return gpu::AddressSpaceAttr::get(context, s);
    };
    SmallVector<Type> workgroupTypes, privateTypes;
    for (memref::AllocaOp a : shared)
      workgroupTypes.push_back(MemRefType::get(
          a.getType().getShape(), a.getType().getElementType(),
          MemRefLayoutAttrInterface(), space(gpu::AddressSpace::Workgroup)));
    for (memref::AllocaOp a : perThread)
      privateTypes.push_back(MemRefType::get(
          a.getType().getShape().drop_front(), a.getType().getElementType(),
          MemRefLayoutAttrInterface(), space(gpu::AddressSpace::Private)));

    IRRewriter rewriter(context);
    rewriter.setInsertionPoint(grid);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value blockSize = arith::ConstantIndexOp::create(rewriter, loc, *threads);
    auto launch = gpu::LaunchOp::create(
        rewriter, loc, grid.getUpperBound()[0], grid.getUpperBound()[1],
        grid.getUpperBound()[2], blockSize, one, one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{}, workgroupTypes, privateTypes);
    Block &launchBody = launch.getBody().front();
    rewriter.setInsertionPointToEnd(&launchBody);
    auto terminator = gpu::TerminatorOp::create(rewriter, loc);

    // The grid's body, run by every thread of every block.
    rewriter.eraseOp(body->getTerminator());
    gpu::KernelDim3 blockIds = launch.getBlockIds();
    rewriter.inlineBlockBefore(body, terminator,
                               ValueRange{blockIds.x, blockIds.y, blockIds.z});
    for (auto [alloca, attribution] :
         llvm::zip(shared, launch.getWorkgroupAttributions())) {
      rewriter.replaceAllUsesWith(alloca.getResult(), attribution);
      rewriter.eraseOp(alloca);
    }
    // Per-thread buffers lose their thread index.
    for (auto [alloca, attribution] :
         llvm::zip(perThread, launch.getPrivateAttributions())) {
      for (Operation *user : llvm::make_early_inc_range(alloca->getUsers())) {
        rewriter.setInsertionPoint(user);
        if (auto load = dyn_cast<memref::LoadOp>(user)) {
          rewriter.replaceOpWithNewOp<memref::LoadOp>(
              load, attribution, load.getIndices().drop_front());
        } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
          rewriter.replaceOpWithNewOp<memref::StoreOp>(
              store, store.getValue(), attribution,
              store.getIndices().drop_front());
        } else {
          return user->emitError("tgc-gpu-lower-block-programs: a "
                                 "per-thread buffer used other than by "
                                 "loads and stores");
        }
      }
      rewriter.eraseOp(alloca);
    }
    // Each phase: this thread's iteration, then a barrier.
    Value thread = launch.getThreadIds().x;
    for (scf::ParallelOp p : phases) {
      Block *phaseBody = p.getBody();
      rewriter.eraseOp(phaseBody->getTerminator());
      rewriter.inlineBlockBefore(phaseBody, p, ValueRange{thread});
      rewriter.setInsertionPoint(p);
      gpu::BarrierOp::create(rewriter, loc);
      rewriter.eraseOp(p);
    }
    rewriter.eraseOp(grid);
    return success();
  }
};

} // namespace
