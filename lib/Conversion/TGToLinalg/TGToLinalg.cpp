//===- TGToLinalg.cpp - the convert-tg-to-linalg pass ---------------------===//

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tg {
#define GEN_PASS_DEF_CONVERTTGTOLINALGPASS
#include "tgc/Conversion/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {
struct ConvertTGToLinalgPass
    : tg::impl::ConvertTGToLinalgPassBase<ConvertTGToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<TGDialect>();
    // Collectives (and ZeRO-1's shards, cut where only the runtime knows
    // the rank) stay: they bufferize into runtime calls (Collectives.cpp).
    target.addLegalOp<AllReduceStartOp, ReduceScatterStartOp, AllGatherStartOp,
                      ParameterGatherStartOp, SumOverProcessesOp, ShardOp,
                      CollectiveWaitOp>();
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, func::FuncDialect>();
    RewritePatternSet patterns(ctx);
    populateTGDataMovementToLinalgPatterns(patterns);
    populateTGElementwiseToLinalgPatterns(patterns);
    populateTGMatmulToLinalgPatterns(patterns);
    populateTGReductionToLinalgPatterns(patterns);
    populateTGAttentionToLinalgPatterns(patterns);
    populateTGOptimizerToLinalgPatterns(patterns, fuseUpdates);
    populateTGFusedToLinalgPatterns(patterns);
    populateTGMoEToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
