//===- Stats.h - `tgc stats`: build the step, measure, report ---*- C++ -*-===//
#ifndef TGC_DRIVER_STATS_H
#define TGC_DRIVER_STATS_H

#include "tgc/Driver/StatsReport.h"
#include "tgc/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

#include <string>

namespace tgc {

/// What `tgc stats` was asked for.
struct StatsRequest {
  std::string output = "-"; // the report
  bool json = false;
  /// Saved activations and the arena the compiled step plans (which runs
  /// the target's schedule: `target` must be given).
  bool memory = false;
  bool returnGradients = false; // the compiled step's, as `tgc` builds it
  bool rematSweep = false;
  std::string memoryTimeline; // a Chrome trace, if not empty
  std::string rematSweepSvg;  // implies rematSweep
};

/// Builds @train_step from the module's @forward once and writes the report
/// (and the files) `request` asks for. `context` says where the figures come
/// from (see StatsReport.h).
llvm::Error runStats(mlir::ModuleOp module, const TrainingConfig &training,
                     StatsContext context, const StatsRequest &request,
                     const TargetBackend &target);

} // namespace tgc

#endif // TGC_DRIVER_STATS_H
