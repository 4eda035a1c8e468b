//===- ExpandMath.cpp - vectorisable exp/log/tanh/erf ---------------------===//

#include "tgc/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCEXPANDMATHPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {
/// select on bf16 values as a select on their i16 bits: LLVM promotes a
/// bf16 select (and its NaN constant) through f32 with __truncsfbf2 calls
/// on a CPU without AVX512-BF16.
struct SelectBF16AsBits : OpRewritePattern<arith::SelectOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::SelectOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isBF16())
      return failure();
    Type i16 = rewriter.getI16Type();
    auto vector = llvm::dyn_cast<VectorType>(type);
    Type bits = vector ? Type(vector.clone(i16)) : i16;
    Location loc = op.getLoc();
    auto asBits = [&](Value v) {
      return arith::BitcastOp::create(rewriter, loc, bits, v).getResult();
    };
    Value chosen = arith::SelectOp::create(rewriter, loc, op.getCondition(),
                                           asBits(op.getTrueValue()),
                                           asBits(op.getFalseValue()));
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, type, chosen);
    return success();
  }
};

struct TGCExpandMathPass
    : tgc::cpu::impl::TGCExpandMathPassBase<TGCExpandMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return llvm::is_contained({"math.exp", "math.expm1", "math.log",
                                 "math.log1p", "math.tanh", "math.erf"},
                                name);
    });
    // f32 <-> bf16 as integer arithmetic (round to nearest even): LLVM
    // calls __truncsfbf2 for a CPU without AVX512-BF16, which Debian's
    // libgcc does not have.
    arith::populateExpandBFloat16Patterns(patterns);
    patterns.add<SelectBF16AsBits>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
