//===- Placement.h - where the tg passes put new ops ------------*- C++ -*-===//
//
// Shared placement rules of the passes that insert collectives into
// @train_step's single block.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DIALECT_TG_TRANSFORMS_PLACEMENT_H
#define TGC_DIALECT_TG_TRANSFORMS_PLACEMENT_H

#include "mlir/IR/Builders.h"

namespace mlir::tg {

/// Sets `b` right after the last op of `body` that defines (or contains the
/// definition of) any of `values`, or at the start of `body` when none
/// does: the first point where an op reading all of them may run.
inline void setInsertionPointAfterLastDef(OpBuilder &b, Block &body,
                                          ValueRange values) {
  Operation *last = nullptr;
  for (Value v : values)
    if (Operation *def = v.getDefiningOp())
      if (Operation *top = body.findAncestorOpInBlock(*def))
        if (!last || last->isBeforeInBlock(top))
          last = top;
  if (last)
    b.setInsertionPointAfter(last);
  else
    b.setInsertionPointToStart(&body);
}

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_PLACEMENT_H
