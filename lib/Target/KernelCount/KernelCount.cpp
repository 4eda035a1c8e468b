//===- KernelCount.cpp - kernels and bytes of a scheduled step -----------===//

#include "tgc/Target/KernelCount.h"

#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Target/ProductFusion.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace tgc;

namespace {

/// Parallel loops on the host's threads, or a GPU launch.
bool isParallelLoop(Operation *op) {
  return isa<scf::ParallelOp, scf::ForallOp, gpu::LaunchOp>(op);
}

/// Whether `op` holds a kernel: a parallel loop, a linalg op or a copy.
bool holdsKernel(Operation *op) {
  return op
      ->walk([](Operation *inner) {
        return isParallelLoop(inner) ||
                       isa<linalg::LinalgOp, memref::CopyOp>(inner)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Iterations of the host loops around `op` (static trip counts).
int64_t repeats(Operation *op) {
  int64_t n = 1;
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp())
    if (auto loop = dyn_cast<scf::ForOp>(parent))
      if (std::optional<APInt> trips = loop.getStaticTripCount())
        n *= trips->getSExtValue();
  return n;
}

/// The bytes of the buffers `kernel` reads or writes from outside itself:
/// of each buffer, the views it takes (at most the whole buffer, however
/// many views of it the kernel reads).
int64_t bytesTouched(Operation *kernel) {
  llvm::SetVector<Value> outside;
  kernel->walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      if (isa<BaseMemRefType>(operand.getType()) &&
          !kernel->isAncestor(operand.getParentRegion()->getParentOp()))
        outside.insert(operand);
  });
  llvm::MapVector<Value, int64_t> viewed; // root buffer -> its views' bytes
  for (Value view : outside)
    viewed[rootBuffer(view)] += mlir::tg::getValueBytes(view);
  int64_t bytes = 0;
  for (auto [root, views] : viewed) {
    int64_t whole = mlir::tg::getValueBytes(root); // 0: a run-time size
    bytes += whole ? std::min(views, whole) : views;
  }
  return bytes;
}

/// The tally of `op` kernels from the module named by `loc` (the first
/// name in it; "" when it has none).
KernelSource &sourceOf(KernelCounts &counts, llvm::StringMap<size_t> &index,
                       Location loc, StringRef op) {
  std::string module;
  loc->walk([&](Location inner) {
    if (auto name = dyn_cast<NameLoc>(inner)) {
      module = name.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  auto [it, added] =
      index.try_emplace(module + " " + op.str(), counts.bySource.size());
  if (added)
    counts.bySource.push_back({module, op.str(), 0, 0});
  return counts.bySource[it->second];
}

} // namespace

void tgc::countKernels(ModuleOp module, KernelCounts &counts) {
  llvm::StringMap<size_t> sourceIndex;
  module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    bool kernel = isParallelLoop(op) ||
                  isa<linalg::LinalgOp, memref::CopyOp>(op) ||
                  (isa<LoopLikeOpInterface>(op) && !holdsKernel(op));
    if (!kernel)
      return WalkResult::advance();
    int64_t n = repeats(op);
    int64_t bytes = n * bytesTouched(op);
    counts.kernels += n;
    counts.bytesMoved += bytes;
    KernelSource &source = sourceOf(counts, sourceIndex, op->getLoc(),
                                    op->getName().getStringRef());
    source.kernels += n;
    source.bytesMoved += bytes;
    return WalkResult::skip();
  });
}
