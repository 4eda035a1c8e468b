//===- TrainingStats.h - a training step's work and memory ------*- C++ -*-===//
//
// Figures read off the IR: the forward graph (@forward) and the reverse graph
// tg-autodiff generated (@train_step). Nothing is estimated from the model
// family: a change to a gradient rule changes these numbers.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DIALECT_TG_ANALYSIS_TRAININGSTATS_H
#define TGC_DIALECT_TG_ANALYSIS_TRAININGSTATS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "tgc/Dialect/TG/Analysis/GatherPrefetch.h"
#include "tgc/Dialect/TG/IR/TGInterfaces.h"

#include "llvm/ADT/SetVector.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tg {

/// Cost of one op: its CostOpInterface; zero for ops of other dialects.
OpCost getOpCost(Operation *op);

struct TrainingStats {
  /// Every parameter (tg.param), and the frozen ones among them (tg.frozen:
  /// no gradient, no optimizer state).
  int64_t parameters = 0;
  int64_t parameterBytes = 0;
  int64_t frozenParameters = 0;
  int64_t frozenParameterBytes = 0;
  int64_t trainableParameters() const { return parameters - frozenParameters; }
  /// The gradients' bytes: one per trainable parameter, of its type.
  int64_t gradientBytes() const {
    return parameterBytes - frozenParameterBytes;
  }
  OpCost forward, backward, optimizer;
  /// Forward ops tg-remat cloned into the reverse graph (tg.recomputed).
  OpCost recompute;
  /// Values the reverse graph reads that the forward graph produced.
  int64_t savedActivationElements = 0;
  int64_t savedActivationBytes = 0;
  int64_t optimizerStateBytes = 0;
  /// The memory plan of intermediates (MemoryPlan.h): arena size and the
  /// most bytes live at once.
  int64_t plannedPeakBytes = 0;
  int64_t maxLiveBytes = 0;
  /// The most gradient bytes the plan keeps alive at once (gradients the
  /// step returns are the caller's and not counted): all of them when the
  /// optimizer runs after the backward pass, far fewer when it runs inside
  /// it (tg-schedule-updates).
  int64_t gradientPeakBytes = 0;
  /// tg-data-parallel: collectives per step and the bytes of the whole
  /// tensors they sum or gather; with ZeRO-1 (tg-shard-optimizer) how many
  /// of them are reduce-scatters and all-gathers.
  int64_t collectives = 0;
  int64_t collectiveBytes = 0;
  int64_t reduceScatters = 0;
  int64_t allGathers = 0;
  /// ZeRO (tg.processes): the processes of the step; with ZeRO-3
  /// (tg-shard-parameters) the bytes of parameters this process holds (its
  /// shards), the gathers of whole parameters for their readers, the most
  /// bytes of gathered parameters the plan keeps alive at once, and the most
  /// gathers in flight at once while a run computes (the prefetch depth).
  int64_t processes = 0;
  bool shardedParameters = false;
  int64_t heldParameterBytes = 0;
  int64_t parameterGathers = 0;
  int64_t gatheredPeakBytes = 0;
  int64_t gathersInFlight = 0;
  /// ZeRO-3's prefetch, as the step records it.
  GatherPrefetchRecord prefetch;
};

/// One value the reverse graph keeps from the forward pass, and who reads it.
struct SavedActivation {
  Value value;
  std::optional<int64_t> layer; // tg.layer of the defining op
  std::string name;             // location name of the defining op
  int64_t elements = 0, bytes = 0;
  /// "tg.matmul of model.layers.0.mlp.down_proj", one per distinct reader.
  SmallVector<std::string> readers;
};

/// The saved activations of `trainStep`, in forward order.
std::vector<SavedActivation> collectSavedActivations(func::FuncOp trainStep);

/// The forward graph of `trainStep`: every op the loss (result #0) depends
/// on, and the low-precision copies of saved activations
/// (tg-low-precision-saves), in schedule order. Everything else is the
/// reverse graph (or the optimizer).
llvm::SetVector<Operation *> getForwardOps(func::FuncOp trainStep);

/// The location name of `op` (e.g. "model.layers.0.mlp.up_proj"), or its
/// printed location when it has none.
std::string getOpName(Operation *op);

/// Computes the statistics of `trainStep` (as tg-autodiff produced it, with
/// or without the optimizer update). The forward part is the backward slice
/// of the returned loss; every other op belongs to the reverse graph, except
/// the optimizer's ops (and the gradient clipping feeding them).
TrainingStats computeTrainingStats(func::FuncOp trainStep);

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_ANALYSIS_TRAININGSTATS_H
