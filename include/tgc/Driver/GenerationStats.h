//===- GenerationStats.h - tgc stats --program=generate ---------*- C++ -*-===//
//
// The work and memory of a generation program, read off its tg IR: FLOPs of
// one @prefill call and one @decode step, the weights and KV caches it
// holds, and the bytes a decode step reads (what bounds its speed).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DRIVER_GENERATIONSTATS_H
#define TGC_DRIVER_GENERATIONSTATS_H

#include "tgc/Frontend/ModelConfig.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/Error.h"

#include <string>

namespace tgc {

struct GenerationStatsRequest {
  std::string input, output = "-";
  bool json = false;
  int64_t prefillTokens = 64;
};

/// Builds the generation program of `model` and writes its report.
llvm::Error runGenerationStats(mlir::MLIRContext &context,
                               const ModelConfig &model,
                               const GenerationStatsRequest &request);

} // namespace tgc

#endif // TGC_DRIVER_GENERATIONSTATS_H
