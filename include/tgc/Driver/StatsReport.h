//===- StatsReport.h - printing `tgc stats` ---------------------*- C++ -*-===//
#ifndef TGC_DRIVER_STATSREPORT_H
#define TGC_DRIVER_STATSREPORT_H

#include "tgc/Dialect/TG/Analysis/TrainingStats.h"
#include "tgc/Driver/Compile.h"
#include "tgc/Frontend/ModelConfig.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <vector>

namespace tgc {

/// What the report says about where the figures come from.
struct StatsContext {
  std::string input;
  std::string remat = "none"; // the policy the figures are for
  std::string modelType;      // empty for tg IR input
  int64_t batchSize = 0, seqLen = 0;
  std::string dtype, optimizer;
  std::string precision = "fp32"; // fp32 or bf16-mixed
  /// Mixtures of experts: the parameters of the experts a token skips
  /// (the active parameters are the others).
  int64_t idleExpertParameters = 0;
};

/// One row of `--remat-sweep`.
struct RematSweepRow {
  std::string label; // "budget 60%", "layers", ...
  int64_t budgetBytes = -1;
  bool feasible = true;
  int64_t plannedPeak = 0, savedActivationBytes = 0, extraFlops = 0;
  double extraFlopsPercent = 0;
};

/// Everything `tgc stats` prints.
struct StatsReport {
  StatsContext context;
  mlir::tg::TrainingStats stats;
  /// With --memory: what the backward pass keeps, and why.
  std::optional<std::vector<mlir::tg::SavedActivation>> saved;
  /// With --memory: the arena the compiled step plans (tgc-plan-buffers).
  std::optional<int64_t> compiledArenaBytes;
  /// With --memory: loop nests and bytes read + written by the bufferized
  /// step (before the target's schedule).
  std::optional<int64_t> kernels, bytesMoved;
  /// With --memory: the same per model module and op, most bytes first.
  std::vector<KernelSource> kernelSources;
  /// With --remat-sweep.
  std::optional<std::vector<RematSweepRow>> sweep;
};

/// A human-readable table.
void printStatsTable(llvm::raw_ostream &os, const StatsReport &report);

/// One JSON object (see docs/stats.md for the keys).
void printStatsJson(llvm::raw_ostream &os, const StatsReport &report);

/// The live bytes over the step's schedule as a Chrome trace (open it in
/// chrome://tracing or ui.perfetto.dev), the peak marked.
void writeMemoryTimeline(llvm::raw_ostream &os, mlir::func::FuncOp step);

/// The sweep as an SVG picture: planned peak against extra FLOPs.
void writeRematSweepSvg(llvm::raw_ostream &os, const StatsReport &report);

} // namespace tgc

#endif // TGC_DRIVER_STATSREPORT_H
