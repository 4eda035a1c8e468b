//===- KeepGatheredParameters.cpp - ZeRO-3: fewer gathers under a budget -===//
//
// A unit's later run reads the weights an earlier gather brought instead of
// gathering them again, while the planned peak stays within a budget. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/Analysis/GatherPrefetch.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGKEEPGATHEREDPARAMETERSPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// A gather that can read earlier gathers' tensors instead: for each of
/// its whole tensors, the earlier one of the same parameter and type.
struct Reuse {
  ParameterGatherStartOp start;
  CollectiveWaitOp wait;
  SmallVector<Value> earlier; // per gathered tensor
  int64_t distance = 0;       // ops from the latest earlier wait
};

/// The parameter a gather sends (its shard, or a cast of it).
Value parameterOf(Value sent) {
  if (auto cast = sent.getDefiningOp<CastOp>())
    return cast.getInput();
  return sent;
}

/// Every gather of `body` that earlier gathers could serve, in order.
SmallVector<Reuse> findReuses(Block &body,
                              const llvm::DenseSet<Operation *> &refused) {
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;
  // The latest gathered tensor of each (parameter, type), and its wait.
  llvm::DenseMap<std::pair<Value, Type>, std::pair<Value, Operation *>> latest;
  SmallVector<Reuse> reuses;
  for (Operation &op : body) {
    auto start = llvm::dyn_cast<ParameterGatherStartOp>(op);
    if (!start || !start.getRequest().hasOneUse())
      continue;
    auto wait =
        llvm::cast<CollectiveWaitOp>(*start.getRequest().getUsers().begin());
    size_t n = start.getShards().size();
    Reuse reuse{start, wait, {}, 0};
    for (auto [i, sent] : llvm::enumerate(start.getShards())) {
      Value whole = wait.getResults()[n + i];
      auto key = std::make_pair(parameterOf(sent), whole.getType());
      auto found = latest.find(key);
      if (found != latest.end()) {
        reuse.earlier.push_back(found->second.first);
        reuse.distance = std::max(
            reuse.distance, position[wait] - position[found->second.second]);
      }
      latest[key] = {whole, wait};
    }
    if (reuse.earlier.size() == n && !refused.contains(start))
      reuses.push_back(reuse);
  }
  return reuses;
}

/// Lets `reuse`'s readers read the earlier tensors; its gather goes.
void applyReuse(Reuse reuse) {
  size_t n = reuse.start.getShards().size();
  for (auto [i, earlier] : llvm::enumerate(reuse.earlier))
    reuse.wait.getResults()[n + i].replaceAllUsesWith(earlier);
  SmallVector<Value> sent(reuse.start.getShards());
  reuse.wait.erase();
  reuse.start.erase();
  for (Value shard : sent)
    if (auto cast = shard.getDefiningOp<CastOp>(); cast && cast->use_empty())
      cast.erase();
}

struct TGKeepGatheredParametersPass
    : tg::impl::TGKeepGatheredParametersPassBase<TGKeepGatheredParametersPass> {
  using Base::Base;

  void runOnOperation() override {
    if (budget < 0)
      return;
    auto step = getOperation().lookupSymbol<func::FuncOp>(trainStepName);
    if (!step || !step.getBody().hasOneBlock()) {
      getOperation().emitError() << "tg-keep-gathered-parameters: no function @"
                                 << trainStepName << " with a body";
      return signalPassFailure();
    }
    Block &body = step.getBody().front();
    if (planMemory(step).arenaBytes > budget)
      return;
    // Nearest first; each tried on a copy of the step, kept if its plan
    // fits. Taking one changes the others' earlier tensors: look again.
    llvm::DenseSet<Operation *> refused;
    int64_t keptBytes = 0; // whole tensors no longer gathered
    while (true) {
      SmallVector<Reuse> reuses = findReuses(body, refused);
      if (reuses.empty())
        break;
      Reuse best =
          *llvm::min_element(reuses, [](const Reuse &a, const Reuse &b) {
            return a.distance < b.distance;
          });
      if (!fits(step, best)) {
        refused.insert(best.start);
        continue;
      }
      for (Value whole :
           best.wait.getResults().drop_front(best.start.getShards().size()))
        keptBytes += getValueBytes(whole);
      applyReuse(best);
    }
    updatePrefetchRecord(step, keptBytes);
  }

  /// tg-shard-parameters' estimate of the gathers' time, less the gathers
  /// that went.
  static void updatePrefetchRecord(func::FuncOp step, int64_t keptBytes) {
    std::optional<GatherPrefetchRecord> record =
        GatherPrefetchRecord::readFrom(step);
    auto processes =
        step->getAttrOfType<IntegerAttr>(TGDialect::kProcessesAttrName);
    if (!record || !processes || keptBytes == 0 ||
        !(record->gatherBandwidth > 0))
      return;
    int64_t n = processes.getInt();
    record->transferSeconds = std::max(
        0.0, record->transferSeconds - static_cast<double>(keptBytes) *
                                           static_cast<double>(n - 1) / n /
                                           (record->gatherBandwidth * 1e9));
    record->exposedSeconds =
        std::min(record->exposedSeconds, record->transferSeconds);
    record->writeTo(step);
  }

  /// Whether the step's planned peak with `reuse` stays within the budget.
  bool fits(func::FuncOp step, const Reuse &reuse) {
    Block &body = step.getBody().front();
    llvm::DenseMap<Operation *, size_t> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = i;
    func::FuncOp trial = step.clone();
    auto at = [&](size_t index) {
      return &*std::next(trial.getBody().front().begin(), index);
    };
    auto positionOf = [&](Value v) -> size_t {
      return position[v.getDefiningOp()];
    };
    Reuse copy;
    copy.start = llvm::cast<ParameterGatherStartOp>(at(position[reuse.start]));
    copy.wait = llvm::cast<CollectiveWaitOp>(at(position[reuse.wait]));
    for (Value earlier : reuse.earlier) {
      auto result = llvm::cast<OpResult>(earlier);
      copy.earlier.push_back(
          at(positionOf(earlier))->getResult(result.getResultNumber()));
    }
    applyReuse(copy);
    bool fits = planMemory(trial).arenaBytes <= budget;
    trial.erase();
    return fits;
  }
};

} // namespace
