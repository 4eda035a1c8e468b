//===- DataParallel.cpp - gradients summed over processes -----------------===//
//
// Inserts a non-blocking all-reduce of every gradient of @train_step, started
// as soon as the gradient is complete. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGDATAPARALLELPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct TGDataParallelPass
    : tg::impl::TGDataParallelPassBase<TGDataParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    auto step = getOperation().lookupSymbol<func::FuncOp>(trainStepName);
    if (!step) {
      getOperation().emitError() << "tg-data-parallel: no function @"
                                 << trainStepName << " (run tg-autodiff first)";
      return signalPassFailure();
    }
    Block &body = step.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    SmallVector<unsigned> gradResults;
    for (unsigned i = 0, e = step.getNumResults(); i < e; ++i)
      if (step.getResultAttr(i, TGDialect::kGradAttrName))
        gradResults.push_back(i);
    if (gradResults.empty() ||
        llvm::any_of(step.getArguments(), [&](BlockArgument arg) {
          return step.getArgAttr(arg.getArgNumber(), TGDialect::kStateAttrName);
        })) {
      step.emitError("tg-data-parallel: @")
          << trainStepName
          << " must return gradients (tg.grad) and have no optimizer state: "
             "run it after tg-autodiff and before tg-optimizer";
      return signalPassFailure();
    }

    OpBuilder b(step.getContext());
    auto weightType = RankedTensorType::get({}, b.getF32Type());
    unsigned weightIndex = step.getNumArguments();
    if (failed(step.insertArgument(
            weightIndex, weightType,
            b.getDictionaryAttr(b.getNamedAttr(TGDialect::kInputAttrName,
                                               b.getStringAttr("dp_weight"))),
            step.getLoc())))
      return signalPassFailure();
    Value weight = step.getArgument(weightIndex);

    for (unsigned r : gradResults) {
      Value grad = ret.getOperand(r);
      if (!llvm::cast<RankedTensorType>(grad.getType())
               .getElementType()
               .isF32()) {
        step.emitError("tg-data-parallel: gradients must be f32, got ")
            << grad.getType();
        return signalPassFailure();
      }
      // Started where the gradient is complete; waited for at the end
      // (tg-schedule-updates moves the wait earlier).
      if (Operation *def = grad.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&body);
      auto start = AllReduceStartOp::create(b, grad.getLoc(), grad, weight);
      b.setInsertionPoint(ret);
      Value sum = AllReduceWaitOp::create(b, grad.getLoc(), start.getRequest(),
                                          start.getResult());
      ret.setOperand(r, sum);
    }
  }
};

} // namespace
