//===- TaskConsumers.cpp - loops into parallel row tasks ------------------===//
//
// An elementwise loop that reads the rows a parallel task computes runs
// inside the task, on its rows.
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

/// The row task's insert of `forall`'s result `i`.
static tensor::ParallelInsertSliceOp insertOfResult(scf::ForallOp forall,
                                                    unsigned i) {
  for (Operation &op : forall.getTerminator().getYieldingOps())
    if (auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(op))
      if (insert.getDest() == forall.getRegionIterArgs()[i])
        return insert;
  return {};
}

/// An elementwise loop that reads the rows a parallel task computes (a
/// norm's rows: the row tasks a target chose, #tg.row_tasks) runs in the
/// task, on those rows as the task has them: the residual stream's
/// gradient, summed with a norm's input gradient, is written once instead
/// of the norm's gradient being written and both read back. It follows the
/// tasks there are and sizes nothing itself. Its other
/// inputs must exist before the tasks, and its result have the rows' type.
void fuseConsumersIntoTasks(func::FuncOp func) {
  DominanceInfo dominance(func);
  IRRewriter rewriter(func.getContext());
  SmallVector<scf::ForallOp> foralls;
  func.walk([&](scf::ForallOp forall) {
    if (forall.getRank() == 1)
      foralls.push_back(forall);
  });
  for (scf::ForallOp forall : foralls) {
    for (unsigned i = 0; i < forall.getNumResults(); ++i) {
      Value rows = forall.getResult(i);
      if (!rows.hasOneUse())
        continue;
      Operation *user = *rows.getUsers().begin();
      auto expand = dyn_cast<tensor::ExpandShapeOp>(user);
      Value full = rows;
      if (expand) {
        if (!expand->hasOneUse())
          continue;
        user = *expand->getUsers().begin();
        full = expand.getResult();
      }
      auto consumer = dyn_cast<linalg::GenericOp>(user);
      tensor::ParallelInsertSliceOp insert = insertOfResult(forall, i);
      if (!consumer || !insert || consumer->getBlock() != forall->getBlock() ||
          consumer.getNumDpsInits() != 1 ||
          consumer.getNumReductionLoops() != 0 ||
          consumer->getResult(0).getType() != full.getType() ||
          !llvm::is_contained(consumer.getDpsInputs(), full) ||
          !consumer.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>() ||
          !llvm::all_of(consumer.getIndexingMapsArray(),
                        [](AffineMap map) { return map.isIdentity(); }) ||
          !consumer.getBody()->getOps<linalg::IndexOp>().empty() ||
          !llvm::all_of(consumer.getDpsInputs(), [&](Value input) {
            return input == full || dominance.properlyDominates(input, forall);
          }))
        continue;
      // The other inputs as the tasks' [N, d] rows.
      rewriter.setInsertionPoint(forall);
      SmallVector<Value> matrices;
      for (Value input : consumer.getDpsInputs())
        matrices.push_back(input == full || !expand
                               ? input
                               : tensor::CollapseShapeOp::create(
                                     rewriter, consumer.getLoc(), input,
                                     expand.getReassociationIndices())
                                     .getResult());
      rewriter.setInsertionPoint(forall.getTerminator());
      RankedTensorType tileType = insert.getSourceType();
      SmallVector<Value> tiles;
      for (auto [input, matrix] :
           llvm::zip_equal(consumer.getDpsInputs(), matrices))
        tiles.push_back(input == full
                            ? insert.getSource()
                            : tensor::ExtractSliceOp::create(
                                  rewriter, consumer.getLoc(), tileType, matrix,
                                  insert.getMixedOffsets(),
                                  insert.getMixedSizes(),
                                  insert.getMixedStrides())
                                  .getResult());
      Value init = tensor::EmptyOp::create(rewriter, consumer.getLoc(),
                                           tileType.getShape(),
                                           tileType.getElementType());
      AffineMap identity = AffineMap::getMultiDimIdentityMap(tileType.getRank(),
                                                             func.getContext());
      auto tile = linalg::GenericOp::create(
          rewriter, consumer.getLoc(), TypeRange{tileType}, tiles, {init},
          SmallVector<AffineMap>(tiles.size() + 1, identity),
          SmallVector<utils::IteratorType>(tileType.getRank(),
                                           utils::IteratorType::parallel));
      rewriter.cloneRegionBefore(consumer.getRegion(), tile.getRegion(),
                                 tile.getRegion().end());
      rewriter.modifyOpInPlace(
          insert, [&] { insert.getSourceMutable().assign(tile.getResult(0)); });
      rewriter.replaceOp(consumer, full);
    }
  }
}

} // namespace mlir::tg::fusion
