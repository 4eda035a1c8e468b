//===- Placement.cpp - where a fused loop may run -------------------------===//
//
// Whether a loop may move to where fusion puts it: not past an in-place
// update of what it reads, nor across ops that move data.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TrainStep.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace mlir::tg::fusion {

/// For every function, its arguments that a result overwrites in place
/// (new parameters and state): (function, argument number) → result number.
InPlaceResults findInPlaceResults(ModuleOp module) {
  llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned> results;
  module.walk([&](func::FuncOp func) {
    for (const tg::InPlaceUpdate &u : tg::getInPlaceUpdates(func))
      if (u.old)
        results[{func, u.old.getArgNumber()}] = u.result;
  });
  return results;
}

/// Whether an op reading `inputs` may run at `at` (an op of `func`'s body
/// or nested in it): not after the op that overwrites one of them in place
/// (tg-schedule-updates puts updates inside the backward sweep; the runtime
/// passes the same buffer for the old and the new value).
bool readsBeforeUpdates(
    const llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned> &inPlace,
    ValueRange inputs, Operation *at) {
  auto func = at->getParentOfType<func::FuncOp>();
  if (!func || func.getBody().empty())
    return true;
  Block &body = func.getBody().front();
  at = body.findAncestorOpInBlock(*at);
  for (Value input : inputs) {
    auto arg = dyn_cast<BlockArgument>(input);
    if (!arg || arg.getOwner() != &body)
      continue;
    auto it = inPlace.find({func, arg.getArgNumber()});
    if (it == inPlace.end())
      continue;
    Operation *writer =
        tg::getUpdatingOp(body.getTerminator()->getOperand(it->second));
    if (!writer || !at)
      return false;
    writer = body.findAncestorOpInBlock(*writer);
    if (!writer || writer == at || writer->isBeforeInBlock(at))
      return false;
  }
  return true;
}

/// Whether an op between `reader` and `at` (in `at`'s block) overwrites in
/// place a tensor that `reader` reads (uses it as its destination), so that
/// moving the read to `at` would put it after the write: attention's
/// running max is updated in place in its loop after its old value is read.
/// Tensors the body reads directly count too: the fused loss gathers each
/// row's target logit before the exponentials overwrite the logits.
bool overwrittenBetween(linalg::GenericOp reader, Operation *at) {
  Block *block = at->getBlock();
  Operation *from = block->findAncestorOpInBlock(*reader);
  SmallVector<Value> inputs(reader.getDpsInputs());
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(reader.getRegion(), captured);
  for (Value value : captured)
    if (isa<RankedTensorType>(value.getType()))
      inputs.push_back(value);
  auto overwrites = [&](OpOperand &use) {
    Operation *owner = use.getOwner();
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(owner))
      return use.get() == insert.getDest();
    auto dps = dyn_cast<DestinationStyleOpInterface>(owner);
    return dps && dps.isDpsInit(&use);
  };
  // Usually the two are close: look at the ops between.
  constexpr int kScanLimit = 32;
  int between = 0;
  Operation *op = from ? from->getNextNode() : nullptr;
  for (; op && op != at && between < kScanLimit; op = op->getNextNode())
    ++between;
  if (from && op == at) {
    for (op = from->getNextNode(); op != at; op = op->getNextNode()) {
      WalkResult found = op->walk([&](Operation *inner) {
        for (OpOperand &operand : inner->getOpOperands())
          if (llvm::is_contained(inputs, operand.get()) && overwrites(operand))
            return WalkResult::interrupt();
        return WalkResult::advance();
      });
      if (found.wasInterrupted())
        return true;
    }
    return false;
  }
  // Otherwise the inputs' uses that lie between.
  for (Value input : inputs)
    for (OpOperand &use : input.getUses()) {
      Operation *inBlock = block->findAncestorOpInBlock(*use.getOwner());
      if (inBlock && (!from || from->isBeforeInBlock(inBlock)) &&
          inBlock->isBeforeInBlock(at) && overwrites(use))
        return true;
    }
  return false;
}

/// Fresh tensors, fills of them, reshapes and constants.
bool movesNoTensorData(Operation *op) {
  return isa<tensor::EmptyOp, linalg::FillOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp>(op) ||
         (isPure(op) && op->getNumRegions() == 0 && op->getNumOperands() == 0);
}

/// Whether the ops between `earlier` and `later` (at most a few) are only
/// those that read `earlier`'s results, directly or through each other (the
/// product that reads a recomputed SwiGLU output), and ops that move no
/// data. Moving `later` up then keeps its results alive only across what
/// needed `earlier` first, not across unrelated work (a gradient's norm
/// hoisted into the forward pass would keep it alive all step).
bool onlyDependentsBetween(Operation *earlier, Operation *later) {
  constexpr int kMaxOpsBetween = 32;
  llvm::SmallPtrSet<Operation *, 16> dependents{earlier};
  int between = 0;
  for (Operation *op = earlier->getNextNode(); op != later;
       op = op->getNextNode()) {
    if (!op || ++between > kMaxOpsBetween)
      return false;
    bool dependent = op->walk([&](Operation *inner) {
                         for (Value v : inner->getOperands())
                           if (Operation *def = v.getDefiningOp();
                               def && dependents.contains(def))
                             return WalkResult::interrupt();
                         return WalkResult::advance();
                       }).wasInterrupted();
    if (dependent) {
      dependents.insert(op);
      continue;
    }
    if (!movesNoTensorData(op))
      return false;
  }
  return true;
}

/// Whether only ops that move no data (fresh tensors, fills of them,
/// reshapes, constants; at most a few) lie between `earlier` and `later`.
bool onlyFreshTensorsBetween(Operation *earlier, Operation *later) {
  constexpr int kMaxOpsBetween = 8;
  int between = 0;
  for (Operation *op = earlier->getNextNode(); op != later;
       op = op->getNextNode())
    if (!op || ++between > kMaxOpsBetween || !movesNoTensorData(op))
      return false;
  return true;
}

} // namespace mlir::tg::fusion
