//===- TrainStep.h - facts about a train step's signature -------*- C++ -*-===//
#ifndef TGC_DIALECT_TG_IR_TRAINSTEP_H
#define TGC_DIALECT_TG_IR_TRAINSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tg {

/// A value the step returns over an argument: a new parameter (`tg.param`)
/// or new optimizer state (`tg.state`), matched to the argument of the same
/// role and name, which the runtime may pass as the same buffer.
struct InPlaceUpdate {
  StringAttr name;
  BlockArgument old; // null when no argument has that name
  unsigned result;
};

/// Every such result of `step`, in result order.
SmallVector<InPlaceUpdate> getInPlaceUpdates(func::FuncOp step);

/// The op that writes the new value `result` of an in-place update: its
/// defining op, or for the result of a tg.collective_wait the collective's
/// start (ZeRO-1's all-gather writes the parameter). Null for an argument.
Operation *getUpdatingOp(Value result);

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_IR_TRAINSTEP_H
