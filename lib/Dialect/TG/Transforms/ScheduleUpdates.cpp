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
    SmallVector<Operation *> starts, waits, moving;
    for (Operation &op : body.without_terminator()) {
      if (isa<AllReduceStartOp>(op))
        starts.push_back(&op);
      else if (isa<AllReduceWaitOp>(op))
        waits.push_back(&op);
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
    llvm::sort(starts, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *op : waits) {
      auto start = op->getOperand(0).getDefiningOp<AllReduceStartOp>();
      Operation *last = lastPrerequisite(step, body, op);
      auto it = llvm::find(starts, start.getOperation());
      if (it != starts.end() && std::next(it) != starts.end() &&
          last->isBeforeInBlock(*std::next(it)))
        last = *std::next(it);
      op->moveAfter(last);
    }
    // The optimizer's ops in program order, so that an op that reads another
    // moved op's result finds it already in place.
    for (Operation *op : moving) {
      Operation *last = lastPrerequisite(step, body, op);
      if (!last)
        op->moveBefore(&body.front());
      else if (last != op->getPrevNode())
        op->moveAfter(last);
    }
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
