//===- GatherPrefetch.cpp - how far ahead ZeRO-3's gathers start ----------===//

#include "tgc/Dialect/TG/Analysis/GatherPrefetch.h"

#include "tgc/Dialect/TG/IR/TGDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <cassert>

using namespace mlir::tg;

namespace {

/// The time model, advanced one run at a time: runs compute one after the
/// other, each after its gather arrived; gathers cross one link in the
/// order they start (the order of the runs).
class Replay {
public:
  Replay(double computeBefore, llvm::ArrayRef<GatherRun> runs)
      : runs(runs), ready(computeBefore) {}

  /// When run k's gather, started `lead` runs ahead, arrives.
  double arrival(size_t k, int64_t lead) const {
    double start = lead == 0                        ? ready
                   : static_cast<int64_t>(k) < lead ? 0.0
                                                    : begins[k - lead];
    return std::max(start, linkFree) + runs[k].transferSeconds;
  }

  /// Commits run k's gather, started `lead` runs ahead; returns its wait.
  double advance(size_t k, int64_t lead) {
    double arrived = arrival(k, lead);
    linkFree = arrived;
    double begin = std::max(ready, arrived);
    double waited = begin - ready;
    begins.push_back(begin);
    ready = begin + runs[k].computeSeconds;
    return waited;
  }

  /// Seconds run k would wait for a gather started `lead` runs ahead.
  double wait(size_t k, int64_t lead) const {
    return std::max(0.0, arrival(k, lead) - ready);
  }

private:
  llvm::ArrayRef<GatherRun> runs;
  llvm::SmallVector<double> begins; // each committed run's start
  double ready;                     // when compute reaches the next run
  double linkFree = 0;
};

} // namespace

int64_t GatherPrefetchPlan::depth() const {
  int64_t most = 0;
  for (int64_t lead : leads)
    most = std::max(most, lead);
  return most;
}

GatherPrefetchPlan
mlir::tg::simulateGatherPrefetch(double computeBefore,
                                 llvm::ArrayRef<GatherRun> runs,
                                 llvm::ArrayRef<int64_t> leads) {
  assert(leads.size() == runs.size() && "one lead per run");
  GatherPrefetchPlan plan;
  plan.leads.assign(leads.begin(), leads.end());
  Replay replay(computeBefore, runs);
  for (size_t k = 0; k < runs.size(); ++k) {
    plan.exposedSeconds += replay.advance(k, leads[k]);
    plan.transferSeconds += runs[k].transferSeconds;
  }
  return plan;
}

GatherPrefetchPlan mlir::tg::planGatherPrefetch(double computeBefore,
                                                llvm::ArrayRef<GatherRun> runs,
                                                int64_t maxLead) {
  assert(maxLead >= 1 && "a planned gather starts at least one run ahead");
  GatherPrefetchPlan plan;
  Replay replay(computeBefore, runs);
  for (size_t k = 0; k < runs.size(); ++k) {
    // Starts keep program order: at most one run further ahead than the
    // previous gather; past the first run all leads start with the step.
    int64_t most = std::min<int64_t>(maxLead, static_cast<int64_t>(k) + 1);
    if (k > 0)
      most = std::min(most, plan.leads.back() + 1);
    double least = replay.wait(k, most);
    double slack = 0.01 * runs[k].transferSeconds;
    int64_t lead = 1;
    while (lead < most && replay.wait(k, lead) > least + slack)
      ++lead;
    plan.leads.push_back(lead);
    plan.exposedSeconds += replay.advance(k, lead);
    plan.transferSeconds += runs[k].transferSeconds;
  }
  return plan;
}

void mlir::tg::GatherPrefetchRecord::writeTo(Operation *step) const {
  Builder b(step->getContext());
  step->setAttr(
      TGDialect::kGatherPrefetchAttrName,
      b.getDictionaryAttr(
          {b.getNamedAttr("planned", b.getBoolAttr(planned)),
           b.getNamedAttr("depth", b.getI64IntegerAttr(depth)),
           b.getNamedAttr("exposed_seconds", b.getF64FloatAttr(exposedSeconds)),
           b.getNamedAttr("transfer_seconds",
                          b.getF64FloatAttr(transferSeconds)),
           b.getNamedAttr("gather_bandwidth",
                          b.getF64FloatAttr(gatherBandwidth)),
           b.getNamedAttr("compute_rate", b.getF64FloatAttr(computeRate))}));
}

std::optional<mlir::tg::GatherPrefetchRecord>
mlir::tg::GatherPrefetchRecord::readFrom(Operation *step) {
  auto dict =
      step->getAttrOfType<DictionaryAttr>(TGDialect::kGatherPrefetchAttrName);
  if (!dict)
    return std::nullopt;
  auto number = [&](StringRef key) {
    auto value = llvm::dyn_cast_or_null<FloatAttr>(dict.get(key));
    return value ? value.getValueAsDouble() : 0.0;
  };
  GatherPrefetchRecord record;
  auto planned = llvm::dyn_cast_or_null<BoolAttr>(dict.get("planned"));
  record.planned = planned && planned.getValue();
  if (auto depth = llvm::dyn_cast_or_null<IntegerAttr>(dict.get("depth")))
    record.depth = depth.getInt();
  record.exposedSeconds = number("exposed_seconds");
  record.transferSeconds = number("transfer_seconds");
  record.gatherBandwidth = number("gather_bandwidth");
  record.computeRate = number("compute_rate");
  return record;
}
