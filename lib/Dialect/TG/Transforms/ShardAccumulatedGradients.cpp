//===- ShardAccumulatedGradients.cpp - micro-batch gradients in shards ----===//
//
// Under ZeRO-3 with micro-batches, reduce-scatters each micro-batch's
// gradients as they complete and adds up their shards, instead of adding up
// whole gradients until the last micro-batch. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Dialect/TG/Transforms/Placement.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGSHARDACCUMULATEDGRADIENTSPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// One bucket's scatter of `mean(g^0 .. g^K-1)` per gradient, taken apart.
struct AccumulatedBucket {
  ReduceScatterStartOp start;
  CollectiveWaitOp wait;
  /// leaves[i][k]: gradient i of micro-batch k.
  SmallVector<SmallVector<Value>> leaves;
  /// The 1/K factor of each gradient's mean.
  SmallVector<ConstantOp> scales;
  /// The scatter of each micro-batch's gradients.
  SmallVector<ReduceScatterStartOp> starts;
  /// The means and the adds that made them, dead after the rewrite.
  SmallVector<Operation *> sums;
};

struct TGShardAccumulatedGradientsPass
    : tg::impl::TGShardAccumulatedGradientsPassBase<
          TGShardAccumulatedGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (microBatches == 1)
      return;
    auto step = getOperation().lookupSymbol<func::FuncOp>(trainStepName);
    if (!step || !step.getBody().hasOneBlock() ||
        !step->hasAttr(TGDialect::kProcessesAttrName)) {
      getOperation().emitError()
          << "tg-shard-accumulated-gradients: no function @" << trainStepName
          << " whose optimizer state is sharded (run tg-shard-optimizer "
             "first)";
      return signalPassFailure();
    }
    if (microBatches < 1) {
      step.emitError("tg-shard-accumulated-gradients: micro-batches must be "
                     "at least 1, got ")
          << microBatches;
      return signalPassFailure();
    }
    Block &body = step.getBody().front();
    std::vector<AccumulatedBucket> buckets;
    for (auto start : body.getOps<ReduceScatterStartOp>())
      if (std::optional<AccumulatedBucket> bucket = match(start))
        buckets.push_back(std::move(*bucket));
    // Every bucket's new starts before any wait is placed: a wait trails
    // the next new start, whichever bucket it belongs to.
    for (AccumulatedBucket &bucket : buckets)
      startPerMicroBatch(body, bucket);
    for (AccumulatedBucket &bucket : buckets)
      for (ReduceScatterStartOp start : bucket.starts)
        newStarts.insert(start);
    for (AccumulatedBucket &bucket : buckets)
      waitAndAccumulate(bucket);
    for (AccumulatedBucket &bucket : buckets) {
      bucket.wait.erase();
      bucket.start.erase();
      for (Operation *op : bucket.sums)
        op->erase();
    }
  }

  /// `start`'s inputs as means of micro-batch gradients, as
  /// tg-accumulate-gradients built them: mul(add(...add(g0, g1)..., gK-1),
  /// 1/K), each value read once.
  std::optional<AccumulatedBucket> match(ReduceScatterStartOp start) {
    if (!start.getRequest().hasOneUse())
      return std::nullopt;
    AccumulatedBucket bucket;
    bucket.start = start;
    bucket.wait = llvm::dyn_cast<CollectiveWaitOp>(
        *start.getRequest().getUsers().begin());
    // The wait's whole (sent) results are read by nothing.
    if (!bucket.wait ||
        llvm::any_of(
            bucket.wait.getResults().take_front(start.getInputs().size()),
            [](Value sent) { return !sent.use_empty(); }))
      return std::nullopt;
    for (Value input : start.getInputs()) {
      auto mean = input.getDefiningOp<MulOp>();
      if (!mean || !input.hasOneUse())
        return std::nullopt;
      auto scale = mean.getRhs().getDefiningOp<ConstantOp>();
      if (!scale || llvm::cast<RankedTensorType>(scale.getType()).getRank())
        return std::nullopt;
      SmallVector<Value> leaves(microBatches);
      Value sum = mean.getLhs();
      bucket.sums.push_back(mean);
      for (int64_t k = microBatches - 1; k > 0; --k) {
        auto add = sum.getDefiningOp<AddOp>();
        if (!add || !sum.hasOneUse() || !add.getRhs().hasOneUse())
          return std::nullopt;
        leaves[k] = add.getRhs();
        bucket.sums.push_back(add);
        sum = add.getLhs();
      }
      if (!sum.hasOneUse() || sum.getType() != input.getType())
        return std::nullopt;
      leaves[0] = sum;
      bucket.leaves.push_back(std::move(leaves));
      bucket.scales.push_back(scale);
    }
    return bucket;
  }

  void startPerMicroBatch(Block &body, AccumulatedBucket &bucket) {
    OpBuilder b(bucket.start.getContext());
    Location loc = bucket.start.getLoc();
    size_t n = bucket.leaves.size();

    // One scatter per micro-batch, started once that micro-batch's
    // gradients of the bucket are complete.
    for (int64_t k = 0; k < microBatches; ++k) {
      SmallVector<Value> inputs;
      for (size_t i = 0; i < n; ++i)
        inputs.push_back(bucket.leaves[i][k]);
      setInsertionPointAfterLastDef(b, body, inputs);
      bucket.starts.push_back(
          ReduceScatterStartOp::create(b, loc, inputs, bucket.start.getWeight(),
                                       bucket.start.getProcessesAttr()));
    }
  }

  void waitAndAccumulate(AccumulatedBucket &bucket) {
    OpBuilder b(bucket.start.getContext());
    Location loc = bucket.start.getLoc();
    size_t n = bucket.leaves.size();

    // Each wait right after the next new start (so that the next bucket's
    // backward ops overlap the communication, and at most two buckets of
    // whole gradients are in flight), and after the previous micro-batch's
    // shards were added up; its shards added up behind it.
    SmallVector<Value> accumulated(n);
    for (int64_t k = 0; k < microBatches; ++k) {
      ReduceScatterStartOp start = bucket.starts[k];
      Operation *after = start->getNextNode();
      while (after && !(llvm::isa<ReduceScatterStartOp>(after) &&
                        newStarts.contains(after)))
        after = after->getNextNode();
      if (!after)
        after = start;
      if (k > 0)
        if (Operation *previous = accumulated.back().getDefiningOp();
            after->isBeforeInBlock(previous))
          after = previous;
      b.setInsertionPointAfter(after);
      SmallVector<Value> inFlight(start.getResults());
      llvm::append_range(inFlight, start.getShards());
      auto wait = CollectiveWaitOp::create(b, bucket.wait.getLoc(),
                                           start.getRequest(), inFlight);
      for (size_t i = 0; i < n; ++i) {
        Value shard = wait.getResults()[n + i];
        accumulated[i] =
            k == 0 ? shard : AddOp::create(b, loc, accumulated[i], shard);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      Value scale = b.clone(*bucket.scales[i])->getResult(0);
      Value mean = MulOp::create(b, loc, accumulated[i], scale);
      bucket.wait.getResults()[n + i].replaceAllUsesWith(mean);
    }
  }

  /// The scatters this pass made.
  llvm::SmallPtrSet<Operation *, 32> newStarts;
};

} // namespace
