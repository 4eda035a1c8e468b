//===- Remat.h - rematerialisation policies ---------------------*- C++ -*-===//
//
// The C++ side of `tg-remat`: choosing which forward values the reverse
// graph keeps and which it recomputes, and applying the choice. `tgc stats`
// calls it directly for its budget sweep.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DIALECT_TG_TRANSFORMS_REMAT_H
#define TGC_DIALECT_TG_TRANSFORMS_REMAT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::tg {

/// A memory budget for the planned peak of intermediates: bytes, or a
/// fraction of the planned peak of policy `none` (what `tgc stats` reports
/// for remat none).
struct MemoryBudget {
  int64_t bytes = -1;
  double fraction = -1;
  bool isSet() const { return bytes >= 0 || fraction >= 0; }
};

/// Parses "1073741824", "1.5GiB", "512MiB", "800MB", "64KiB", "0.4" (a
/// fraction of the planned peak of policy `none`) or "40%".
llvm::Expected<MemoryBudget> parseMemoryBudget(llvm::StringRef text);

/// One forward value the reverse graph reads: kept or recomputed, and why.
struct RematDecision {
  std::string name; // the op's location name, e.g. model.layers.0.mlp.up_proj
  std::string op;   // e.g. tg.linear
  std::string type; // e.g. tensor<8x128x688xf32>
  int64_t bytes = 0;
  bool recomputed = false;
  int64_t flops = 0; // FLOPs of recomputing this op (0 when kept)
  std::string reason;
};

struct RematResult {
  RematPolicy policy = RematPolicy::None;
  std::vector<RematDecision> decisions;
  /// FLOPs of every op cloned into the reverse graph.
  int64_t extraFlops = 0;
  /// Planned arena of the step with and without rematerialisation.
  int64_t plannedPeak = 0, plannedPeakWithout = 0;
  /// The budget the choice was made for (-1: none), and for a fraction the
  /// planned peak of policy `none` it is a fraction of (-1: bytes given).
  int64_t budgetBytes = -1, budgetOfBytes = -1;
  /// Candidate plans the budget policy weighed.
  int64_t candidatesEvaluated = 0;
};

/// Rewrites `step` (a train step as tg-autodiff/tg-optimizer produce it) by
/// `policy`: forward ops whose values are not kept are cloned into the
/// reverse graph right before their first use there. Ops annotated
/// `tg.remat = "save" | "recompute"` are honoured under every policy.
/// Fails, with a diagnostic on `step`, when no plan fits the budget. With
/// `fusedRecompute` (fusion on) policy none still recomputes the cheap
/// values a fused backward kernel can remake from values kept anyway, when
/// that lowers the planned peak. With `savedElement` (bf16/f16) plans count
/// the saved activations in that type, as tg-low-precision-saves will keep
/// them after this rewrite (which does not apply it). With
/// `gatheredParameters` (ZeRO-3: each reader gets a parameter from a
/// gather) the cheap recomputation reads no parameter that the reverse
/// graph does not read anyway, as that would gather it once more.
FailureOr<RematResult> rematerialize(func::FuncOp step, RematPolicy policy,
                                     MemoryBudget budget = {},
                                     bool fusedRecompute = false,
                                     Type savedElement = {},
                                     bool gatheredParameters = false);

/// The --remat-report table.
void printRematReport(llvm::raw_ostream &os, const RematResult &result);

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_REMAT_H
