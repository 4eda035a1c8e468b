//===- DataParallel.cpp - gradients summed over processes -----------------===//
//
// Inserts a non-blocking all-reduce of every gradient of @train_step, started
// as soon as the gradient is complete. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Dialect/TG/Transforms/Placement.h"

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
    if (!step.getBody().hasOneBlock()) {
      step.emitError("tg-data-parallel: @")
          << trainStepName << " must have a single block";
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

    // Buckets of consecutive gradients in the order the backward pass
    // completes them; each is summed by one collective.
    SmallVector<unsigned> order(gradResults);
    auto position = [&](unsigned r) -> Operation * {
      Operation *def = ret.getOperand(r).getDefiningOp();
      return def ? body.findAncestorOpInBlock(*def) : nullptr;
    };
    llvm::stable_sort(order, [&](unsigned lhs, unsigned rhs) {
      Operation *x = position(lhs), *y = position(rhs);
      return x != y && (!x || (y && x->isBeforeInBlock(y)));
    });
    SmallVector<SmallVector<unsigned>> buckets;
    int64_t bucketSize = 0;
    bool open = false; // the last bucket takes more gradients
    for (unsigned r : order) {
      Value grad = ret.getOperand(r);
      auto type = llvm::cast<RankedTensorType>(grad.getType());
      if (!type.getElementType().isF32()) {
        step.emitError("tg-data-parallel: gradients must be f32, got ") << type;
        return signalPassFailure();
      }
      // A small gradient joins the open bucket if it fits; a large one is
      // a bucket of its own, closed to the next.
      int64_t bytes = type.getNumElements() * 4;
      bool small = bytes < bucketBytes;
      if (!small || !open || bucketSize + bytes > bucketBytes) {
        buckets.emplace_back();
        bucketSize = 0;
      }
      buckets.back().push_back(r);
      bucketSize += bytes;
      open = small;
    }

    SmallVector<Value> grads;
    for (SmallVector<unsigned> &bucket : buckets) {
      grads.clear();
      for (unsigned r : bucket)
        grads.push_back(ret.getOperand(r));
      // Started where its last gradient is complete; waited for at the end
      // (tg-schedule-updates moves the wait earlier).
      setInsertionPointAfterLastDef(b, body, grads);
      auto start = AllReduceStartOp::create(b, step.getLoc(), grads, weight);
      b.setInsertionPoint(ret);
      auto wait = CollectiveWaitOp::create(b, step.getLoc(), start.getRequest(),
                                           start.getResults());
      for (auto [r, sum] : llvm::zip(bucket, wait.getResults()))
        ret.setOperand(r, sum);
    }
  }
};

} // namespace
