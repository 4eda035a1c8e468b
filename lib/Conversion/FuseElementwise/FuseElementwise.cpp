//===- FuseElementwise.cpp - tgc-fuse-elementwise -------------------------===//

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TrainStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCFUSEELEMENTWISEPASS
#include "tgc/Conversion/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {

/// For every function, its arguments that a result overwrites in place
/// (new parameters and state): (function, argument number) → result number.
llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned>
findInPlaceResults(ModuleOp module) {
  llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned> results;
  module.walk([&](func::FuncOp func) {
    for (const tg::InPlaceUpdate &u : tg::getInPlaceUpdates(func))
      if (u.old)
        results[{func, u.old.getArgNumber()}] = u.result;
  });
  return results;
}

constexpr unsigned kMaxFusedInputs = 40;

struct TGCFuseElementwisePass
    : tg::impl::TGCFuseElementwisePassBase<TGCFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    auto inPlace = findInPlaceResults(getOperation());
    // Fuses a producer into its consumer when the producer is an elementwise
    // linalg.generic whose only user is that consumer (a multi-use producer
    // would be computed twice), and the move does not make it read a
    // parameter or optimizer state after the op that overwrites it in place
    // (tg-schedule-updates puts updates inside the backward sweep; the
    // runtime passes the same buffer for the old and the new value).
    auto shouldFuse = [&](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      Operation *consumer = operand->getOwner();
      auto generic = dyn_cast_or_null<linalg::GenericOp>(producer);
      if (!generic || !producer->hasOneUse() ||
          !isa<linalg::GenericOp>(consumer))
        return false;
      // Bounded fan-in: a fused op is one GPU kernel, whose parameters
      // (several words per buffer) PTX limits to 4 KiB.
      if (generic.getNumDpsInputs() +
              llvm::cast<linalg::GenericOp>(consumer).getNumDpsInputs() >
          kMaxFusedInputs)
        return false;
      auto func = consumer->getParentOfType<func::FuncOp>();
      if (!func || func.getBody().empty())
        return true;
      Block &body = func.getBody().front();
      Operation *at = body.findAncestorOpInBlock(*consumer);
      for (Value input : generic.getDpsInputs()) {
        auto arg = dyn_cast<BlockArgument>(input);
        if (!arg || arg.getOwner() != &body)
          continue;
        auto it = inPlace.find({func, arg.getArgNumber()});
        if (it == inPlace.end())
          continue;
        Operation *writer =
            tg::getUpdatingOp(body.getTerminator()->getOperand(it->second));
        if (!writer || !at)
          return false;
        writer = body.findAncestorOpInBlock(*writer);
        if (!writer || writer == at || writer->isBeforeInBlock(at))
          return false;
      }
      return true;
    };
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
