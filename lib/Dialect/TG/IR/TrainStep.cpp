//===- TrainStep.cpp - facts about a train step's signature ---------------===//

#include "tgc/Dialect/TG/IR/TrainStep.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

using namespace mlir;
using namespace mlir::tg;

SmallVector<InPlaceUpdate> mlir::tg::getInPlaceUpdates(func::FuncOp step) {
  SmallVector<InPlaceUpdate> updates;
  for (unsigned r = 0, e = step.getNumResults(); r < e; ++r)
    for (StringRef role :
         {TGDialect::kParamAttrName, TGDialect::kStateAttrName}) {
      auto name = step.getResultAttrOfType<StringAttr>(r, role);
      if (!name)
        continue;
      InPlaceUpdate update{name, BlockArgument(), r};
      for (BlockArgument arg : step.getArguments())
        if (step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), role) == name)
          update.old = arg;
      updates.push_back(update);
    }
  return updates;
}

Operation *mlir::tg::getUpdatingOp(Value result) {
  Operation *def = result.getDefiningOp();
  if (auto wait = llvm::dyn_cast_or_null<CollectiveWaitOp>(def))
    return wait.getRequest().getDefiningOp();
  return def;
}
