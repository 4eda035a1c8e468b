//===- FuseElementwise.cpp - tgc-fuse-elementwise -------------------------===//

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCFUSEELEMENTWISEPASS
#include "tgc/Conversion/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {

/// The results of a train step that overwrite an argument in place: new
/// parameters and optimizer state, returned under the argument's name.
/// Maps argument number → result number.
llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned>
findInPlaceResults(ModuleOp module) {
  llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned> results;
  module.walk([&](func::FuncOp func) {
    for (StringRef role :
         {tg::TGDialect::kParamAttrName, tg::TGDialect::kStateAttrName}) {
      llvm::StringMap<unsigned> resultOf;
      for (unsigned r = 0, e = func.getNumResults(); r < e; ++r)
        if (auto name = func.getResultAttrOfType<StringAttr>(r, role))
          resultOf[name.getValue()] = r;
      for (unsigned a = 0, e = func.getNumArguments(); a < e; ++a)
        if (auto name = func.getArgAttrOfType<StringAttr>(a, role))
          if (auto it = resultOf.find(name.getValue()); it != resultOf.end())
            results[{func, a}] = it->second;
    }
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
            body.getTerminator()->getOperand(it->second).getDefiningOp();
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
