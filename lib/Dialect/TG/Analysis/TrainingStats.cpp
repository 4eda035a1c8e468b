//===- TrainingStats.cpp - counting a training step's work and memory -----===//
//
// Costs come from each op's CostOpInterface (lib/Dialect/TG/IR/Costs.cpp).
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/Analysis/TrainingStats.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Analysis/SliceAnalysis.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

int64_t numel(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getNumElements();
}

int64_t elementBytes(Value v) {
  Type t = llvm::cast<RankedTensorType>(v.getType()).getElementType();
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

bool isOptimizerOp(Operation *op) { return op->hasTrait<OptimizerStep>(); }

/// The most bytes `plan` keeps alive at once in buffers holding a value
/// that `holds` picks.
int64_t mostLiveAtOnce(const MemoryPlan &plan,
                       llvm::function_ref<bool(Value)> holds) {
  std::vector<int64_t> delta(plan.schedule.size() + 1, 0);
  for (const PlannedBuffer &buffer : plan.buffers)
    if (llvm::any_of(buffer.values, holds)) {
      delta[buffer.block.start] += buffer.block.bytes;
      delta[buffer.block.end + 1] -= buffer.block.bytes;
    }
  int64_t live = 0, most = 0;
  for (int64_t d : delta)
    most = std::max(most, live += d);
  return most;
}

} // namespace

OpCost mlir::tg::getOpCost(Operation *op) {
  if (auto costed = llvm::dyn_cast<CostOpInterface>(op))
    return costed.getCost();
  return {};
}

TrainingStats mlir::tg::computeTrainingStats(func::FuncOp step) {
  TrainingStats stats;
  if (auto processes =
          step->getAttrOfType<IntegerAttr>(TGDialect::kProcessesAttrName))
    stats.processes = processes.getInt();
  for (BlockArgument arg : step.getArguments()) {
    if (step.getArgAttr(arg.getArgNumber(), TGDialect::kParamAttrName)) {
      // A ZeRO-3 shard counts as its whole parameter.
      auto whole = step.getArgAttrOfType<TypeAttr>(
          arg.getArgNumber(), TGDialect::kShardedAttrName);
      auto type = llvm::cast<RankedTensorType>(whole ? whole.getValue()
                                                     : arg.getType());
      int64_t elements = type.getNumElements();
      int64_t bytes = elements * elementBytes(arg);
      stats.shardedParameters |= bool(whole);
      stats.heldParameterBytes += numel(arg) * elementBytes(arg);
      stats.parameters += elements;
      stats.parameterBytes += bytes;
      if (step.getArgAttr(arg.getArgNumber(), TGDialect::kFrozenAttrName)) {
        stats.frozenParameters += elements;
        stats.frozenParameterBytes += bytes;
      }
    } else if (step.getArgAttr(arg.getArgNumber(), TGDialect::kStateAttrName)) {
      stats.optimizerStateBytes += numel(arg) * elementBytes(arg);
    }
  }

  llvm::SetVector<Operation *> forward = getForwardOps(step);

  // Clipping scales the gradients for the optimizer: count it there.
  llvm::DenseSet<Operation *> optimizerOps;
  step.walk([&](Operation *op) {
    if (isOptimizerOp(op))
      optimizerOps.insert(op);
  });
  step.walk([&](MulOp op) {
    if (op.getRhs().getDefiningOp<ClipFactorOp>())
      optimizerOps.insert(op);
  });

  llvm::DenseSet<Value> saved;
  for (Operation &op : step.getBody().front().without_terminator()) {
    OpCost cost = getOpCost(&op);
    OpCost &bucket = forward.contains(&op)        ? stats.forward
                     : optimizerOps.contains(&op) ? stats.optimizer
                     : op.hasAttr(TGDialect::kRecomputedAttrName)
                         ? stats.recompute
                         : stats.backward;
    bucket.matmulMultiplications += cost.matmulMultiplications;
    bucket.flops += cost.flops;
    if (forward.contains(&op) || optimizerOps.contains(&op))
      continue;
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && forward.contains(def) &&
          !def->hasTrait<OpTrait::ConstantLike>() &&
          saved.insert(operand).second) {
        stats.savedActivationElements += numel(operand);
        stats.savedActivationBytes += numel(operand) * elementBytes(operand);
      }
    }
  }
  MemoryPlan plan = planMemory(step);
  stats.plannedPeakBytes = plan.arenaBytes;
  stats.maxLiveBytes = plan.maxLiveBytes;

  step.walk([&](AllReduceStartOp op) {
    ++stats.collectives;
    for (Value input : op.getInputs())
      stats.collectiveBytes += getValueBytes(input);
  });
  step.walk([&](ReduceScatterStartOp op) {
    ++stats.collectives;
    ++stats.reduceScatters;
    for (Value input : op.getInputs())
      stats.collectiveBytes += getValueBytes(input);
  });
  step.walk([&](AllGatherStartOp op) {
    ++stats.collectives;
    ++stats.allGathers;
    for (Value output : op.getOutputs())
      stats.collectiveBytes += getValueBytes(output);
  });

  // ZeRO-3's gathers: how many, their bytes, and how many are in flight
  // at once (started for later runs while one computes).
  int64_t inFlight = 0;
  for (Operation &op : step.getBody().front()) {
    if (auto gather = llvm::dyn_cast<ParameterGatherStartOp>(op)) {
      ++stats.collectives;
      ++stats.parameterGathers;
      for (Value whole : gather.getResults())
        stats.collectiveBytes += getValueBytes(whole);
      stats.gathersInFlight = std::max(stats.gathersInFlight, ++inFlight);
    } else if (auto wait = llvm::dyn_cast<CollectiveWaitOp>(op)) {
      if (wait.getRequest().getDefiningOp<ParameterGatherStartOp>())
        --inFlight;
    }
  }
  if (std::optional<GatherPrefetchRecord> prefetch =
          GatherPrefetchRecord::readFrom(step))
    stats.prefetch = *prefetch;
  stats.gatheredPeakBytes = mostLiveAtOnce(plan, [](Value v) {
    auto gather = v.getDefiningOp<ParameterGatherStartOp>();
    return gather && llvm::is_contained(gather.getResults(), v);
  });

  // Gradients: what each tg.sum_squares reads (one per parameter).
  llvm::DenseSet<Value> gradients;
  step.walk([&](SumSquaresOp op) { gradients.insert(op.getInput()); });
  stats.gradientPeakBytes = mostLiveAtOnce(
      plan, [&](Value v) { return gradients.contains(v); });
  return stats;
}

llvm::SetVector<Operation *> mlir::tg::getForwardOps(func::FuncOp step) {
  llvm::SetVector<Operation *> forward;
  Operation *ret = step.getBody().front().getTerminator();
  if (ret->getNumOperands())
    if (Operation *lossOp = ret->getOperand(0).getDefiningOp()) {
      BackwardSliceOptions options;
      options.inclusive = true;
      (void)getBackwardSlice(lossOp, &forward, options);
    }
  // In block order, with the copies of saved activations made in the
  // forward pass for the reverse graph alone.
  llvm::SetVector<Operation *> ordered;
  for (Operation &op : step.getBody().front())
    if (forward.contains(&op) || op.hasAttr(TGDialect::kSavedCopyAttrName))
      ordered.insert(&op);
  return ordered;
}

/// The model-level name of `op` (a NameLoc), if it has one.
static std::optional<std::string> findOpName(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = llvm::dyn_cast<NameLoc>(inner))
        return name.getName().str();
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return std::nullopt;
}

std::string mlir::tg::getOpName(Operation *op) {
  if (std::optional<std::string> name = findOpName(op))
    return *name;
  Location loc = op->getLoc();
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

std::vector<SavedActivation>
mlir::tg::collectSavedActivations(func::FuncOp step) {
  Operation *ret = step.getBody().front().getTerminator();
  llvm::SetVector<Operation *> forward = getForwardOps(step);

  std::vector<SavedActivation> saved;
  for (Operation &op : step.getBody().front().without_terminator()) {
    if (!forward.contains(&op) || op.hasTrait<OpTrait::ConstantLike>())
      continue;
    for (Value result : op.getResults()) {
      SavedActivation a;
      // Reverse-graph readers; through views to the op that computes.
      std::function<void(Value)> addReaders = [&](Value v) {
        for (Operation *user : v.getUsers()) {
          if (forward.contains(user) || user == ret)
            continue;
          // Views, and the reverse graph's widening of a kept copy.
          if (user->hasTrait<StorageView>() || llvm::isa<CastOp>(user)) {
            addReaders(user->getResult(0));
            continue;
          }
          std::string what = user->getName().getStringRef().str();
          if (auto matmul = llvm::dyn_cast<MatmulOp>(user))
            what = matmul.getTransposeLhs() ? "weight gradient (tg.matmul)"
                                            : "input gradient (tg.matmul)";
          if (user->hasAttr(TGDialect::kRecomputedAttrName))
            what = "recomputed " + what;
          // Ops the optimizer added have no model name: their kind says it.
          std::optional<std::string> name = findOpName(user);
          std::string reader = name ? what + " of " + *name : what;
          if (!llvm::is_contained(a.readers, reader))
            a.readers.push_back(reader);
        }
      };
      addReaders(result);
      if (a.readers.empty())
        continue;
      a.value = result;
      if (auto layer = op.getAttrOfType<IntegerAttr>(TGDialect::kLayerAttrName))
        a.layer = layer.getInt();
      a.name = getOpName(&op);
      a.elements = numel(result);
      a.bytes = a.elements * elementBytes(result);
      saved.push_back(std::move(a));
    }
  }
  return saved;
}
