//===- GatherPrefetch.h - how far ahead ZeRO-3's gathers start --*- C++ -*-===//
//
// The prefetch planner of tg-shard-parameters: for each run of one unit's
// readers, how many runs ahead its parameter gather starts. It replays the
// step on a simple time model (the runs' compute, one link that carries
// the gathers in order) and starts a gather earlier only where that hides
// more of its transfer: each run ahead keeps one more run's weights alive.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DIALECT_TG_ANALYSIS_GATHERPREFETCH_H
#define TGC_DIALECT_TG_ANALYSIS_GATHERPREFETCH_H

#include "mlir/IR/Operation.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace mlir::tg {

/// One run of readers of a unit's gathered parameters, in program order.
struct GatherRun {
  /// Seconds from the run's start (right after its wait) to the next
  /// run's start.
  double computeSeconds = 0;
  /// Seconds its gather occupies the link.
  double transferSeconds = 0;
};

/// How far ahead each run's gather starts, and what the model expects.
struct GatherPrefetchPlan {
  /// Per run: 0 starts its gather right before it; k ≥ 1 right after the
  /// wait of the run k before it, or with the step when there is none.
  llvm::SmallVector<int64_t> leads;
  /// The model's seconds of runs waiting for their gathers, and of all
  /// gathers' transfers.
  double exposedSeconds = 0;
  double transferSeconds = 0;
  /// The most runs ahead any gather starts.
  int64_t depth() const;
};

/// The model's estimate for the given leads. `computeBefore` is the
/// compute before the first run. The starts must keep program order
/// (leads[k] ≤ leads[k-1] + 1).
GatherPrefetchPlan simulateGatherPrefetch(double computeBefore,
                                          llvm::ArrayRef<GatherRun> runs,
                                          llvm::ArrayRef<int64_t> leads);

/// Leads of 1 to `maxLead`: each run takes the smallest lead whose wait is
/// within 1% of its transfer of the least the model allows it (a gather
/// never starts more runs ahead than it needs to).
GatherPrefetchPlan planGatherPrefetch(double computeBefore,
                                      llvm::ArrayRef<GatherRun> runs,
                                      int64_t maxLead);

/// What a ZeRO-3 step records of its prefetch (`tg.gather_prefetch`, set by
/// tg-shard-parameters, read by `tgc stats`): the most runs ahead a gather
/// starts, whether the planner chose it, its rates (GB/s, GFLOP/s), and the
/// time model's seconds of gathers and of runs waiting on them.
struct GatherPrefetchRecord {
  bool planned = false;
  int64_t depth = 0;
  double exposedSeconds = 0;
  double transferSeconds = 0;
  double gatherBandwidth = 0;
  double computeRate = 0;

  void writeTo(Operation *step) const;
  static std::optional<GatherPrefetchRecord> readFrom(Operation *step);
};

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_ANALYSIS_GATHERPREFETCH_H
