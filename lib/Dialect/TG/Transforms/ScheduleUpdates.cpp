//===- ScheduleUpdates.cpp - the optimizer in the backward sweep ----------===//
//
// Moves each parameter's optimizer work (its gradient's sum of squares and
// its update) to the earliest point of @train_step where it may run, so that
// gradients die one by one during the backward sweep. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGSCHEDULEUPDATESPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Whether `arg` is a parameter or a piece of optimizer state: its readers
/// must run before an update overwrites it in place.
bool isUpdatedInPlace(func::FuncOp func, BlockArgument arg) {
  return func.getArgAttr(arg.getArgNumber(), TGDialect::kParamAttrName) ||
         func.getArgAttr(arg.getArgNumber(), TGDialect::kStateAttrName);
}

/// The last op of `body` that must run before `op`, or null when `op` may
/// run first.
Operation *lastPrerequisite(func::FuncOp func, Block &body, Operation *op) {
  Operation *last = nullptr;
  auto after = [&](Operation *other) {
    if (other && other != op && (!last || last->isBeforeInBlock(other)))
      last = other;
  };
  for (Value operand : op->getOperands()) {
    // A parameter's shard (ZeRO-1) is copied right before its update.
    if (auto shard = operand.getDefiningOp<ShardOp>();
        shard && op->hasTrait<ParameterUpdate>())
      continue;
    if (Operation *def = operand.getDefiningOp()) {
      after(body.findAncestorOpInBlock(*def));
      continue;
    }
    auto arg = llvm::cast<BlockArgument>(operand);
    if (arg.getOwner() != &body || !op->hasTrait<ParameterUpdate>() ||
        !isUpdatedInPlace(func, arg))
      continue;
    for (Operation *user : arg.getUsers())
      after(body.findAncestorOpInBlock(*user));
  }
  return last;
}

struct TGScheduleUpdatesPass
    : tg::impl::TGScheduleUpdatesPassBase<TGScheduleUpdatesPass> {
  using Base::Base;

  void runOnOperation() override {
    auto step = getOperation().lookupSymbol<func::FuncOp>(trainStepName);
    if (!step) {
      getOperation().emitError()
          << "tg-schedule-updates: no function @" << trainStepName
          << " (run tg-autodiff and tg-optimizer first)";
      return signalPassFailure();
    }
    if (!step.getBody().hasOneBlock()) {
      step.emitError("tg-schedule-updates: @")
          << trainStepName << " must have a single block";
      return signalPassFailure();
    }
    Block &body = step.getBody().front();
    SmallVector<Operation *> starts, waits, gatherWaits, moving;
    for (Operation &op : body.without_terminator()) {
      if (isa<AllReduceStartOp, ReduceScatterStartOp>(op))
        starts.push_back(&op);
      else if (isa<CollectiveWaitOp>(op))
        (op.getOperand(0).getDefiningOp<AllGatherStartOp>() ? gatherWaits
                                                            : waits)
            .push_back(&op);
      else if (isa<SumSquaresOp>(op) || op.hasTrait<ParameterUpdate>())
        moving.push_back(&op);
    }
    // Collectives start as soon as their gradient is complete.
    for (Operation *op : starts)
      if (Operation *last = lastPrerequisite(step, body, op))
        op->moveAfter(last);
    // Each wait trails its start by one collective: the next gradient's
    // backward ops overlap the communication, and at most two gradients
    // are in flight.
    auto trailNextStart = [&](ArrayRef<Operation *> waitOps,
                              SmallVector<Operation *> sortedStarts) {
      llvm::sort(sortedStarts, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      for (Operation *op : waitOps) {
        Operation *start = op->getOperand(0).getDefiningOp();
        Operation *last = lastPrerequisite(step, body, op);
        auto it = llvm::find(sortedStarts, start);
        if (it != sortedStarts.end() && std::next(it) != sortedStarts.end() &&
            last->isBeforeInBlock(*std::next(it)))
          last = *std::next(it);
        op->moveAfter(last);
      }
    };
    trailNextStart(waits, starts);
    // The optimizer's ops in program order, so that an op that reads another
    // moved op's result finds it already in place; a parameter's shard is
    // copied right before its update.
    for (Operation *op : moving) {
      Operation *last = lastPrerequisite(step, body, op);
      if (!last)
        op->moveBefore(&body.front());
      else if (last != op->getPrevNode())
        op->moveAfter(last);
      for (Value operand : op->getOperands())
        if (auto shard = operand.getDefiningOp<ShardOp>())
          shard->moveBefore(op);
    }
    // ZeRO-1's all-gathers (moved with the updates) are waited for like the
    // other collectives.
    SmallVector<Operation *> allStarts(starts);
    for (Operation *op : moving)
      if (isa<AllGatherStartOp>(op))
        allStarts.push_back(op);
    trailNextStart(gatherWaits, allStarts);
    llvm::append_range(waits, gatherWaits);
    // Moving later (after readers tg-remat added) must not pass a user.
    llvm::append_range(moving, starts);
    llvm::append_range(moving, waits);
    for (Operation *op : moving)
      for (Operation *user : op->getUsers())
        if (body.findAncestorOpInBlock(*user)->isBeforeInBlock(op)) {
          op->emitError("tg-schedule-updates: cannot place this op before "
                        "its user and after its operands");
          return signalPassFailure();
        }
  }
};

} // namespace
