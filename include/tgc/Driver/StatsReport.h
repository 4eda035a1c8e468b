//===- StatsReport.h - printing `tgc stats` ---------------------*- C++ -*-===//
#ifndef TGC_DRIVER_STATSREPORT_H
#define TGC_DRIVER_STATSREPORT_H

#include "tgc/Dialect/TG/Analysis/TrainingStats.h"
#include "tgc/Frontend/ModelConfig.h"

#include "llvm/Support/raw_ostream.h"

namespace tgc {

/// What the report says about where the figures come from.
struct StatsContext {
  std::string input;
  std::string modelType; // empty for tg IR input
  int64_t batchSize = 0, seqLen = 0;
  std::string dtype, optimizer;
};

/// A human-readable table.
void printStatsTable(llvm::raw_ostream &os, const StatsContext &context,
                     const mlir::tg::TrainingStats &stats);

/// One JSON object (see docs/stats.md for the keys).
void printStatsJson(llvm::raw_ostream &os, const StatsContext &context,
                    const mlir::tg::TrainingStats &stats);

} // namespace tgc

#endif // TGC_DRIVER_STATSREPORT_H
