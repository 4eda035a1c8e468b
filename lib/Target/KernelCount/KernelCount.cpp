//===- KernelCount.cpp - kernels and bytes of a scheduled step -----------===//

#include "tgc/Target/KernelCount.h"

#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Target/ProductFusion.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace tgc;

namespace {

/// The tally of `op` ops from the module named by `loc` (the first name in
/// it; "" when it has none).
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

void tgc::countKernels(ModuleOp module, tg::FusionMode fusion,
                       const KernelCountModel &model, KernelCounts &counts) {
  // Iterations of the loops around `op` (constant trip counts): chunk
  // and tile loops, and parallel tasks (attention's, per head).
  auto repeats = [](Operation *op) {
    int64_t n = 1;
    for (Operation *parent = op->getParentOp(); parent;
         parent = parent->getParentOp()) {
      if (auto loop = dyn_cast<scf::ForOp>(parent)) {
        if (std::optional<APInt> trips = loop.getStaticTripCount())
          n *= trips->getSExtValue();
      } else if (auto tasks = dyn_cast<scf::ForallOp>(parent)) {
        if (std::optional<SmallVector<int64_t>> counts =
                getConstantIntValues(tasks.getMixedUpperBound()))
          for (int64_t count : *counts)
            n *= count;
      }
    }
    return n;
  };
  // A buffer a parallel task makes for itself (a score tile, a copy of
  // its queries or of a key tile) of at most 256 KiB stays in that task's
  // core's cache: no trip to memory.
  auto taskLocal = [&](Value operand) {
    Value root = rootBuffer(operand);
    Operation *def = root.getDefiningOp();
    return isa_and_nonnull<memref::AllocOp>(def) &&
           def->getParentOfType<scf::ForallOp>() &&
           tg::getValueBytes(root) <= model.taskCacheBytes;
  };
  // What the target does inside its products' tiles is no kernel: the
  // fill of the output, a layout change of it, and the epilogue, which
  // reads the output's tile in cache (its other buffers count).
  llvm::StringMap<size_t> sourceIndex;
  llvm::DenseSet<Operation *> doneInTiles;
  llvm::DenseMap<Operation *, Value> epilogueOutputs;
  // Layouts change inside the tiles of f32 products only (a product of
  // bf16 operands widened to f32 reads and writes its copies).
  auto inF32Tiles = [&](Operation *product) {
    return model.fusesIntoProductTiles(product) &&
           llvm::all_of(product->getOperandTypes(),
                        [](Type t) { return getElementTypeOrSelf(t).isF32(); });
  };
  // A product that packs an operand from the f32 values a loop rounded it
  // from: the loop is no kernel, the product reads the f32 values.
  llvm::DenseMap<Operation *, std::pair<Value, Value>> readsInstead;
  module.walk([&](linalg::LinalgOp product) {
    if (Operation *rounding = model.roundingPackedBy(product)) {
      doneInTiles.insert(rounding);
      readsInstead[product] = {rounding->getOperand(1),
                               rounding->getOperand(0)};
    }
    if (fusion == tg::FusionMode::None)
      return;
    if (!model.fusesIntoProductTiles(product))
      return;
    if (linalg::FillOp fill = findAccumulatorInit(product))
      doneInTiles.insert(fill);
    // The tiles write the new layout: the product's bytes stay, the
    // transpose's go.
    if (inF32Tiles(product))
      if (linalg::TransposeOp transpose = findOutputTranspose(product))
        doneInTiles.insert(transpose);
    if (linalg::GenericOp epilogue = findEpilogue(product))
      epilogueOutputs[epilogue] = product.getDpsInits()[0];
  });
  if (fusion != tg::FusionMode::None)
    module.walk([&](linalg::TransposeOp transpose) {
      if (findHeadsOperand(transpose, inF32Tiles))
        doneInTiles.insert(transpose);
    });
  // A task's slice of a step buffer of at most 256 KiB that several of
  // the task's ops read or write is in its core's cache after the first:
  // one trip to memory per task.
  llvm::DenseSet<Value> taskSlices;
  auto countedInTask = [&](Operation *op, Value operand) {
    if (!isa<scf::ForallOp>(op->getParentOp()) ||
        !isa_and_nonnull<memref::SubViewOp>(operand.getDefiningOp()) ||
        tg::getValueBytes(operand) > model.taskCacheBytes)
      return false;
    return !taskSlices.insert(operand).second;
  };
  module.walk([&](Operation *op) {
    // Parallel tasks are one kernel (a pass over what they read and
    // write); the loop nests inside them are not.
    if (isa<scf::ForallOp>(op)) {
      int64_t n = repeats(op);
      counts.kernels += n;
      sourceOf(counts, sourceIndex, op->getLoc(), op->getName().getStringRef())
          .kernels += n;
      return;
    }
    if (!isa<linalg::LinalgOp, memref::CopyOp>(op) ||
        op->getParentOfType<linalg::LinalgOp>() || doneInTiles.contains(op))
      return;
    auto epilogue = epilogueOutputs.find(op);
    auto instead = readsInstead.find(op);
    int64_t bytes = 0;
    for (Value operand : op->getOperands())
      if ((epilogue == epilogueOutputs.end() ||
           rootBuffer(operand) != epilogue->second) &&
          !taskLocal(operand) && !countedInTask(op, operand))
        bytes += tg::getValueBytes(instead != readsInstead.end() &&
                                           operand == instead->second.first
                                       ? instead->second.second
                                       : operand);
    int64_t n = repeats(op);
    int64_t kernels = epilogue == epilogueOutputs.end() &&
                              !op->getParentOfType<scf::ForallOp>()
                          ? n
                          : 0;
    counts.kernels += kernels;
    counts.bytesMoved += n * bytes;
    KernelSource &source = sourceOf(counts, sourceIndex, op->getLoc(),
                                    op->getName().getStringRef());
    source.kernels += kernels;
    source.bytesMoved += n * bytes;
  });
}
