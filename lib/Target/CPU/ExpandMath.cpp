//===- ExpandMath.cpp - vectorisable exp/log/tanh/erf ---------------------===//

#include "tgc/Target/CPU/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCEXPANDMATHPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {
struct TGCExpandMathPass
    : tgc::cpu::impl::TGCExpandMathPassBase<TGCExpandMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return llvm::is_contained({"math.exp", "math.expm1", "math.log",
                                 "math.log1p", "math.tanh", "math.erf"},
                                name);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
