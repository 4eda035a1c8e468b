//===- HostReads.cpp - device values the host program reads ---------------===//

#include "HostReads.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;

bool tgc::cuda::isHostCopy(Value memref) {
  auto alloca = memref.getDefiningOp<memref::AllocaOp>();
  return alloca && alloca->hasAttr(kHostCopyAttrName);
}

bool tgc::cuda::isHostCopyAccess(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return isHostCopy(load.getMemRef());
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    return isHostCopy(copy.getTarget());
  return false;
}

bool tgc::cuda::containsParallelLoop(Operation *op) {
  return op->walk([](scf::ParallelOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// The host copy that `op` fills from `buffer`, if it is such a copy.
static Value hostCopyFilledFrom(Operation *op, Value buffer) {
  if (auto memcpy = dyn_cast<gpu::MemcpyOp>(op))
    if (memcpy.getSrc() == buffer && tgc::cuda::isHostCopy(memcpy.getDst()))
      return memcpy.getDst();
  if (auto copy = dyn_cast<memref::CopyOp>(op))
    if (copy.getSource() == buffer && tgc::cuda::isHostCopy(copy.getTarget()))
      return copy.getTarget();
  return {};
}

/// A host copy of `buffer` made earlier in `loop`'s block, with nothing
/// between it and `loop` that could change `buffer`: every use of it there
/// a load or another copy to the host. The layers' several grouped
/// products read the same offsets.
static Value earlierHostCopy(Value buffer, scf::ForOp loop) {
  Block *block = loop->getBlock();
  for (Operation *filler : buffer.getUsers()) {
    Value copy = hostCopyFilledFrom(filler, buffer);
    if (!copy || filler->getBlock() != block || !filler->isBeforeInBlock(loop))
      continue;
    bool unchanged = llvm::all_of(buffer.getUsers(), [&](Operation *user) {
      Operation *top = block->findAncestorOpInBlock(*user);
      bool between =
          top && filler->isBeforeInBlock(top) && top->isBeforeInBlock(loop);
      return !between || isa<memref::LoadOp>(user) ||
             hostCopyFilledFrom(user, buffer);
    });
    if (unchanged)
      return copy;
  }
  return {};
}

/// Whether `buffer` can be copied to the host before `loop` for its
/// loads there: defined before it, of static shape and identity layout,
/// at most `maxBytes`, and only loaded in it (nothing in the loop changes
/// it, so one copy before the loop holds for all its iterations).
static bool copyable(Value buffer, scf::ForOp loop, int64_t maxBytes) {
  if (!loop.isDefinedOutsideOfLoop(buffer))
    return false;
  auto type = dyn_cast<MemRefType>(buffer.getType());
  if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
      !type.getElementType().isIntOrFloat() ||
      type.getNumElements() * type.getElementTypeBitWidth() > 8 * maxBytes)
    return false;
  // A view could alias a buffer the loop writes: only whole buffers.
  bool whole =
      isa<BlockArgument>(buffer) || buffer.getDefiningOp<memref::AllocOp>();
  if (!whole)
    return false;
  return llvm::all_of(buffer.getUsers(), [&](Operation *user) {
    return !loop->isAncestor(user) || isa<memref::LoadOp>(user);
  });
}

bool tgc::cuda::copyHostReads(scf::ForOp loop, bool deviceMemory,
                              int64_t maxBytes) {
  llvm::MapVector<Value, SmallVector<memref::LoadOp>> reads;
  bool copyableReads = true;
  loop.getBody()->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<scf::ParallelOp>(op))
      return WalkResult::skip();
    auto load = dyn_cast<memref::LoadOp>(op);
    if (!load || isHostCopy(load.getMemRef()))
      return WalkResult::advance();
    if (!copyable(load.getMemRef(), loop, maxBytes)) {
      copyableReads = false;
      return WalkResult::interrupt();
    }
    reads[load.getMemRef()].push_back(load);
    return WalkResult::advance();
  });
  if (!copyableReads || reads.empty())
    return false;
  // Only control values: what sets the trip count of a loop of kernels
  // inside (an expert's chunks of rows). A loop that reads data such as
  // token ids to address rows keeps running whole on the device.
  llvm::SetVector<Operation *> derived;
  for (auto &entry : reads)
    for (memref::LoadOp load : entry.second)
      getForwardSlice(load.getResult(), &derived);
  bool setsTripCounts = false;
  loop.getBody()->walk([&](scf::ForOp inner) {
    Operation *bound = inner.getUpperBound().getDefiningOp();
    if (bound && derived.contains(bound) && containsParallelLoop(inner))
      setsTripCounts = true;
  });
  if (!setsTripCounts)
    return false;
  auto func = loop->getParentOfType<func::FuncOp>();
  OpBuilder entry = OpBuilder::atBlockBegin(&func.getBody().front());
  OpBuilder before(loop);
  Location loc = loop.getLoc();
  for (auto &[buffer, loads] : reads) {
    Value copy = earlierHostCopy(buffer, loop);
    if (!copy) {
      auto type = cast<MemRefType>(buffer.getType());
      copy = memref::AllocaOp::create(entry, loc, type);
      copy.getDefiningOp()->setAttr(kHostCopyAttrName, entry.getUnitAttr());
      Type noToken;
      if (deviceMemory)
        gpu::MemcpyOp::create(before, loc, noToken,
                              /*asyncDependencies=*/ValueRange(), copy, buffer);
      else
        memref::CopyOp::create(before, loc, buffer, copy);
    }
    for (memref::LoadOp load : loads)
      load->setOperand(0, copy);
  }
  return true;
}
