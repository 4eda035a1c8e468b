//===- FuseElementwise.cpp - tgc-fuse-elementwise -------------------------===//

#include "Fusion.h"

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TrainStep.h"
#include "tgc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCFUSEELEMENTWISEPASS
#include "tgc/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {

using namespace mlir::tg::fusion;

/// A producer with several readers is recomputed in each of them when it is
/// this cheap: a few scalar ops per element (SiLU is five) and no reads
/// other than its operands' elements. Its result then never goes through
/// memory; the ops are repeated once per reader.
constexpr unsigned kMaxRecomputedOps = 8;
constexpr unsigned kMaxRecomputingReaders = 3;

/// Whether `producer`, read by `readers` generics, is cheap to recompute in
/// each and moves fewer bytes that way: stored, it reads its inputs (I)
/// once, writes its result (E) and each reader reads it back; recomputed,
/// each reader reads the inputs: (readers − 1)·I < (readers + 1)·E. A SiLU
/// read twice passes (I = E); a sum of three gradients read three times
/// does not (I = 3E).
bool isCheapToRecompute(linalg::GenericOp producer, int64_t readers) {
  if (producer.getNumReductionLoops() != 0 || producer.getNumDpsInits() != 1 ||
      readers > kMaxRecomputingReaders)
    return false;
  // Sizes unknown (0: a dynamic shape): not recomputed.
  int64_t inputs = 0, result = tg::getValueBytes(producer->getResult(0));
  llvm::SmallPtrSet<Value, 4> seen;
  for (Value input : producer.getDpsInputs()) {
    int64_t bytes = tg::getValueBytes(input);
    if (bytes == 0 || result == 0)
      return false;
    if (seen.insert(input).second)
      inputs += bytes;
  }
  if ((readers - 1) * inputs >= (readers + 1) * result)
    return false;
  unsigned ops = 0;
  for (Operation &op : producer.getBody()->without_terminator()) {
    if (!isPure(&op) || op.getNumRegions() != 0 || isa<tensor::ExtractOp>(op))
      return false;
    ++ops;
  }
  return ops <= kMaxRecomputedOps;
}

struct TGCFuseElementwisePass
    : tg::impl::TGCFuseElementwisePassBase<TGCFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    auto inPlace = findInPlaceResults(getOperation());
    // Fuses a producer into its consumer when the producer is an elementwise
    // linalg.generic whose only user is that consumer, or cheap to
    // recompute and read only by a few generics (each gets a copy, and the
    // producer's result is never stored), and the move does not make it
    // read a parameter or optimizer state after the op that overwrites it in
    // place (tg-schedule-updates puts updates inside the backward sweep; the
    // runtime passes the same buffer for the old and the new value).
    auto shouldFuse = [&](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      Operation *consumer = operand->getOwner();
      auto generic = dyn_cast_or_null<linalg::GenericOp>(producer);
      // Same block: fused into a loop's body, a producer outside it would
      // run once per iteration.
      if (!generic || !isa<linalg::GenericOp>(consumer) ||
          producer->getBlock() != consumer->getBlock())
        return false;
      // A saved activation's low-precision copy exists to be stored: fused
      // into its reader in the reverse graph, the f32 value it rounds would
      // stay alive in its place.
      if (generic->hasAttr(tg::kSavedCopyAttrName))
        return false;
      if (!producer->hasOneUse() &&
          (!isCheapToRecompute(generic,
                               llvm::range_size(producer->getUsers())) ||
           !llvm::all_of(producer->getUsers(), [](Operation *user) {
             return isa<linalg::GenericOp>(user);
           })))
        return false;
      // Bounded fan-in: a fused op is one GPU kernel, whose parameters
      // (several words per buffer) PTX limits to 4 KiB.
      if (generic.getNumDpsInputs() +
              llvm::cast<linalg::GenericOp>(consumer).getNumDpsInputs() >
          kMaxFusedInputs)
        return false;
      return !overwrittenBetween(generic, consumer) &&
             readsBeforeUpdates(inPlace, generic.getDpsInputs(), consumer);
    };
    getOperation().walk([](func::FuncOp func) {
      accumulateSummedProducts(func);
      reuseTransposes(func);
    });
    generalizeTransposes(getOperation());
    // A reshape between an elementwise loop and a layout change (attention
    // splits heads into groups: [.., S·G, D] ↔ [.., S, G, D]) is folded into
    // the loop by expanding its dimensions, so that the two can fuse.
    // Only there: upstream's folding elsewhere turns matmuls fed through
    // reshapes into higher-rank generic contractions.
    auto isLayoutChange = [](Operation *op) {
      return op && op->hasAttr(kPermutationAttr);
    };
    auto isElementwise = [](Operation *op) {
      auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
      return generic && generic.getNumReductionLoops() == 0 &&
             !generic->hasAttr(kPermutationAttr);
    };
    auto foldReshape = [&](OpOperand *operand) {
      Operation *owner = operand->getOwner();
      if (auto expand = dyn_cast<tensor::ExpandShapeOp>(owner))
        return isElementwise(operand->get().getDefiningOp()) &&
               llvm::all_of(expand->getUsers(), isLayoutChange);
      auto collapse = operand->get().getDefiningOp<tensor::CollapseShapeOp>();
      return collapse && isElementwise(owner) &&
             isLayoutChange(collapse.getSrc().getDefiningOp());
    };
    RewritePatternSet reshapes(&getContext());
    linalg::populateFoldReshapeOpsByExpansionPatterns(reshapes, foldReshape);
    if (failed(applyPatternsGreedily(getOperation(), std::move(reshapes))))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    FrozenRewritePatternSet frozen(std::move(patterns));
    if (failed(applyPatternsGreedily(getOperation(), frozen)))
      return signalPassFailure();
    // Siblings fused into multi-result generics can feed consumers again.
    if (fuseAllSiblings(getOperation(), inPlace) &&
        failed(applyPatternsGreedily(getOperation(), frozen)))
      return signalPassFailure();
    respecializeTransposes(getOperation());
    getOperation().walk([&](func::FuncOp func) {
      fuseConsumersIntoTasks(func);
      fuseWideningIntoReaders(func, inPlace);
    });
  }
};

} // namespace
