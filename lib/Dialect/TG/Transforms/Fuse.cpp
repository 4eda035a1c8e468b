//===- Fuse.cpp - tg-fuse: fused ops on the forward graph -----------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Support/Chunking.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGFUSEPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// cross_entropy(linear(x, W, b), t) → linear_cross_entropy(x, W, b, t).
struct FuseLinearCrossEntropy : OpRewritePattern<CrossEntropyOp> {
  FuseLinearCrossEntropy(MLIRContext *ctx, int64_t chunkBytes,
                         int64_t minChunkRows)
      : OpRewritePattern(ctx), chunkBytes(chunkBytes),
        minChunkRows(minChunkRows) {}

  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    auto linear = op.getLogits().getDefiningOp<LinearOp>();
    if (!linear || !linear->hasOneUse())
      return rewriter.notifyMatchFailure(op,
                                         "logits are not a linear's only use");
    RankedTensorType logits = linear.getType();
    int64_t vocab = logits.getShape().back();
    // The fused op keeps the input's gradient ([rows, D]) for the backward
    // pass where the unfused pair keeps the logits ([rows, V]): it pays for
    // vocabularies at least as wide as the input (LM heads), not for a
    // classifier's few classes.
    int64_t width = linear.getWeight().getType().getDimSize(1);
    if (vocab < width)
      return rewriter.notifyMatchFailure(op, "fewer classes than inputs");
    int64_t rows = logits.getNumElements() / vocab;
    int64_t bytesPerRow =
        vocab * std::max<int64_t>(1, logits.getElementTypeBitWidth() / 8);
    // Balanced chunks: a short last chunk would cost a whole pass over the
    // weight gradient for a few rows.
    int64_t chunk =
        tgc::balancedChunkSize(rows, bytesPerRow, chunkBytes, minChunkRows);
    Location loc = rewriter.getFusedLoc({linear.getLoc(), op.getLoc()});
    auto fused = LinearCrossEntropyOp::create(
        rewriter, loc, linear.getInput(), linear.getWeight(), linear.getBias(),
        op.getTargets(), op.getIgnoreIndexAttr(),
        rewriter.getI64IntegerAttr(chunk), op.getSoftcapAttr());
    // What the front end recorded about the pair (its layer) stays.
    for (NamedAttribute attr : op->getDiscardableAttrs())
      fused->setAttr(attr.getName(), attr.getValue());
    rewriter.replaceOp(op, fused.getResult());
    rewriter.eraseOp(linear);
    return success();
  }

  int64_t chunkBytes, minChunkRows;
};

struct TGFusePass : tg::impl::TGFusePassBase<TGFusePass> {
  using Base::Base;

  void runOnOperation() override {
    if (chunkBytes <= 0 || minChunkRows <= 0) {
      getOperation().emitError()
          << "tg-fuse: chunk-bytes and min-chunk-rows must be positive";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    if (linearCrossEntropy)
      patterns.add<FuseLinearCrossEntropy>(&getContext(), chunkBytes,
                                           minChunkRows);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
