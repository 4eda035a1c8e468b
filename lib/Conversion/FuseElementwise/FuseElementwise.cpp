//===- FuseElementwise.cpp - tgc-fuse-elementwise -------------------------===//

#include "tgc/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCFUSEELEMENTWISEPASS
#include "tgc/Conversion/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {

/// Fuses a producer into its consumer when the producer is an elementwise
/// linalg.generic whose only user is that consumer (a multi-use producer
/// would be computed twice).
bool shouldFuse(OpOperand *operand) {
  Operation *producer = operand->get().getDefiningOp();
  auto generic = dyn_cast_or_null<linalg::GenericOp>(producer);
  if (!generic || !producer->hasOneUse())
    return false;
  return isa<linalg::GenericOp>(operand->getOwner());
}

struct TGCFuseElementwisePass
    : tg::impl::TGCFuseElementwisePassBase<TGCFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
