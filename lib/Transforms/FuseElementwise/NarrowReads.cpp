//===- NarrowReads.cpp - reading saved copies narrow ----------------------===//
//
// A cast that widens a saved bf16/f16 copy is folded into its readers,
// which widen each element as they read it.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TrainStep.h"

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

using namespace mlir;

namespace mlir::tg::fusion {

/// Whether `op` only widens its one input (`arith.extf` over identity
/// maps): the reverse graph's f32 view of a saved bf16/f16 copy.
static bool isWideningCast(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Block *body = op.getBody();
  auto widen = dyn_cast<arith::ExtFOp>(body->front());
  return widen && widen.getIn() == body->getArgument(0) &&
         body->getTerminator()->getNumOperands() == 1 &&
         body->getTerminator()->getOperand(0) == widen.getResult();
}

/// What reads `v`, directly or through reshapes made outside parallel
/// tasks: slices taken in tasks (ops in an scf.forall) and loops
/// (`linalg.generic` inputs); false when anything else reads it.
static bool
collectNarrowableReads(Value v, SmallVectorImpl<tensor::ExtractSliceOp> &slices,
                       SmallVectorImpl<OpOperand *> &loops) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user) &&
        !user->getParentOfType<scf::ForallOp>()) {
      if (!collectNarrowableReads(user->getResult(0), slices, loops))
        return false;
      continue;
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user)) {
      if (!slice->getParentOfType<scf::ForallOp>())
        return false;
      slices.push_back(slice);
      continue;
    }
    auto loop = dyn_cast<linalg::GenericOp>(user);
    if (!loop || !loop.isDpsInput(&use))
      return false;
    loops.push_back(&use);
  }
  return true;
}

/// Makes the loop that reads `use` read `narrow` (the same elements in a
/// narrower float type) and widen each element as it reads it.
static void readWidening(RewriterBase &rewriter, OpOperand &use, Value narrow) {
  auto loop = cast<linalg::GenericOp>(use.getOwner());
  Type wideType = getElementTypeOrSelf(use.get().getType());
  BlockArgument arg = loop.getMatchingBlockArgument(&use);
  rewriter.modifyOpInPlace(loop, [&] {
    use.set(narrow);
    arg.setType(getElementTypeOrSelf(narrow.getType()));
  });
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(loop.getBody());
  Value wide = arith::ExtFOp::create(rewriter, loop.getLoc(), wideType, arg);
  rewriter.replaceAllUsesExcept(arg, wide, wide.getDefiningOp());
}

/// A cast that widens a saved bf16/f16 copy for the reverse graph, read
/// only by parallel tasks (the norms' tasks recomputing and differentiating
/// the norm of the saved residual stream; attention's gradient tasks
/// reading Q, K and V) and by loops through reshapes (attention's
/// rowsum(dO·O) reading O as heads), would be a pass of its own that writes
/// an f32 copy of the whole tensor for them to read back. Instead each
/// task slices the narrow tensor, and the loops that read it or its slices
/// widen each element as they read it (`arith.extf` in their bodies); any
/// other reader of a slice reads it widened in the task (a buffer of the
/// task's size). The same values, without the f32 copy.
void fuseWideningIntoReaders(
    func::FuncOp func,
    const llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned> &inPlace) {
  SmallVector<linalg::GenericOp> widenings;
  func.walk([&](linalg::GenericOp op) {
    if (op.hasPureTensorSemantics() && isWideningCast(op) &&
        !op->getParentOfType<scf::ForallOp>())
      widenings.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  for (linalg::GenericOp widening : widenings) {
    Value narrow = widening.getDpsInputs()[0];
    Type narrowType = getElementTypeOrSelf(narrow.getType());
    SmallVector<tensor::ExtractSliceOp> slices;
    SmallVector<OpOperand *> loops;
    if (!collectNarrowableReads(widening->getResult(0), slices, loops) ||
        (slices.empty() && loops.empty()))
      continue;
    // The reads of the narrow tensor move to its readers: nothing may
    // overwrite it in place before them.
    auto movableTo = [&](Operation *reader) {
      Operation *at = widening->getBlock()->findAncestorOpInBlock(*reader);
      return at && !overwrittenBetween(widening, at) &&
             readsBeforeUpdates(inPlace, ValueRange{narrow}, reader);
    };
    if (!llvm::all_of(slices,
                      [&](tensor::ExtractSliceOp s) { return movableTo(s); }) ||
        !llvm::all_of(
            loops, [&](OpOperand *use) { return movableTo(use->getOwner()); }))
      continue;
    // The reshapes between the cast and the slices, remade on the narrow
    // tensor next to their originals.
    llvm::DenseMap<Value, Value> narrowOf{{widening->getResult(0), narrow}};
    std::function<Value(Value)> narrowView = [&](Value wide) -> Value {
      if (Value known = narrowOf.lookup(wide))
        return known;
      Operation *reshape = wide.getDefiningOp();
      Value source = narrowView(reshape->getOperand(0));
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointAfter(reshape);
      Value remade;
      if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape))
        remade =
            tensor::CollapseShapeOp::create(rewriter, collapse.getLoc(), source,
                                            collapse.getReassociationIndices());
      else {
        auto expand = cast<tensor::ExpandShapeOp>(reshape);
        remade = tensor::ExpandShapeOp::create(
            rewriter, expand.getLoc(), expand.getResultType().clone(narrowType),
            source, expand.getReassociationIndices(),
            expand.getMixedOutputShape());
      }
      return narrowOf[wide] = remade;
    };
    for (tensor::ExtractSliceOp slice : slices) {
      rewriter.setInsertionPoint(slice);
      Location loc = slice.getLoc();
      auto narrowSlice = tensor::ExtractSliceOp::create(
          rewriter, loc,
          cast<RankedTensorType>(slice.getType().clone(narrowType)),
          narrowView(slice.getSource()), slice.getMixedOffsets(),
          slice.getMixedSizes(), slice.getMixedStrides());
      Value widened; // the slice widened in the task, made on demand
      for (OpOperand &use : llvm::make_early_inc_range(slice->getUses())) {
        auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
        if (reader && reader.isDpsInput(&use)) {
          readWidening(rewriter, use, narrowSlice);
          continue;
        }
        if (!widened) {
          Value init =
              tensor::EmptyOp::create(rewriter, loc, slice.getType().getShape(),
                                      getElementTypeOrSelf(slice.getType()));
          auto copy = linalg::GenericOp::create(
              rewriter, loc, TypeRange{slice.getType()},
              ValueRange{narrowSlice}, ValueRange{init},
              SmallVector<AffineMap>(2, rewriter.getMultiDimIdentityMap(
                                            slice.getType().getRank())),
              SmallVector<utils::IteratorType>(slice.getType().getRank(),
                                               utils::IteratorType::parallel));
          rewriter.cloneRegionBefore(widening.getRegion(), copy.getRegion(),
                                     copy.getRegion().end());
          widened = copy.getResult(0);
        }
        rewriter.modifyOpInPlace(use.getOwner(), [&] { use.set(widened); });
      }
      rewriter.eraseOp(slice);
    }
    for (OpOperand *use : loops)
      readWidening(rewriter, *use, narrowView(use->get()));
    // The wide reshapes and the cast, now unread.
    std::function<void(Value)> eraseUnread = [&](Value wide) {
      for (Operation *user : llvm::make_early_inc_range(wide.getUsers()))
        eraseUnread(user->getResult(0));
      if (wide.use_empty())
        rewriter.eraseOp(wide.getDefiningOp());
    };
    eraseUnread(widening->getResult(0));
  }
}

} // namespace mlir::tg::fusion
