//===- TrainingStats.cpp - counting a training step's work and memory -----===//
//
// The per-element FLOP counts below are the model documented in
// docs/stats.md; matrix products are exact.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/Analysis/TrainingStats.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Analysis/SliceAnalysis.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

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

OpCost elementwise(Value v, int64_t perElement) {
  return {0, perElement * numel(v)};
}

OpCost products(int64_t multiplications, int64_t extraFlops = 0) {
  return {multiplications, 2 * multiplications + extraFlops};
}

/// Multiplications of attention's score and value products per (B, Hq, S, Skv).
int64_t attentionPairs(AttentionOp op) {
  auto q = op.getQuery().getType(), k = op.getKey().getType();
  return q.getDimSize(0) * q.getDimSize(2) * q.getDimSize(1) * k.getDimSize(1);
}

bool isOptimizerOp(Operation *op) {
  return llvm::isa<GlobalNormOp, ClipFactorOp, SGDUpdateOp,
                   SGDMomentumUpdateOp, AdamWUpdateOp>(op);
}

} // namespace

OpCost mlir::tg::getOpCost(Operation *op) {
  return llvm::TypeSwitch<Operation *, OpCost>(op)
      .Case([](MatmulOp o) {
        auto lhs = o.getLhs().getType();
        int64_t k = o.getTransposeLhs() ? lhs.getShape().end()[-2]
                                        : lhs.getShape().back();
        return products(numel(o) * k);
      })
      .Case([](LinearOp o) {
        int64_t in = o.getWeight().getType().getDimSize(1);
        return products(numel(o) * in, o.getBias() ? numel(o) : 0);
      })
      .Case<AddOp, SubOp, MulOp, ScaleOp, ReluOp, ReluGradOp>(
          [](Operation *o) { return elementwise(o->getResult(0), 1); })
      .Case<ReduceSumOp>(
          [](ReduceSumOp o) { return elementwise(o.getInput(), 1); })
      .Case([](GeluOp o) { return elementwise(o, 8); })
      .Case([](GeluGradOp o) { return elementwise(o, 12); })
      .Case([](SiluOp o) { return elementwise(o, 4); })
      .Case([](SiluGradOp o) { return elementwise(o, 7); })
      .Case([](SoftmaxOp o) { return elementwise(o, 5); })
      .Case([](SoftmaxGradOp o) { return elementwise(o, 4); })
      .Case([](RMSNormOp o) { return elementwise(o, 4); })
      .Case([](RMSNormGradOp o) { return elementwise(o.getInputGrad(), 11); })
      .Case([](LayerNormOp o) { return elementwise(o, 8); })
      .Case([](LayerNormGradOp o) { return elementwise(o.getInputGrad(), 14); })
      .Case([](RopeOp o) { return elementwise(o, 3); })
      .Case([](EmbeddingGradOp o) { return elementwise(o.getGrad(), 1); })
      .Case([](CrossEntropyOp o) { return elementwise(o.getLogits(), 4); })
      .Case([](CrossEntropyGradOp o) { return elementwise(o, 6); })
      .Case([](AttentionOp o) {
        int64_t pairs = attentionPairs(o);
        int64_t d = o.getQuery().getType().getDimSize(3),
                dv = o.getValue().getType().getDimSize(3);
        // Q·Kᵀ and P·V, plus scaling and the softmax of every score.
        return products(pairs * (d + dv), 6 * pairs);
      })
      .Case([](AttentionGradOp o) {
        auto q = o.getQuery().getType(), k = o.getKey().getType();
        int64_t pairs = q.getDimSize(0) * q.getDimSize(2) * q.getDimSize(1) *
                        k.getDimSize(1);
        int64_t d = q.getDimSize(3), dv = o.getValue().getType().getDimSize(3);
        // Recomputed scores Q·Kᵀ, then dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K,
        // dK = dSᵀ·Q; softmax recomputation and its gradient per score.
        return products(pairs * (3 * d + 2 * dv), 10 * pairs);
      })
      .Case([](GlobalNormOp o) {
        int64_t n = 0;
        for (Value v : o.getInputs())
          n += numel(v);
        return OpCost{0, 2 * n};
      })
      .Case([](SGDUpdateOp o) { return elementwise(o.getNewParam(), 4); })
      .Case([](SGDMomentumUpdateOp o) { return elementwise(o.getNewParam(), 6); })
      .Case([](AdamWUpdateOp o) { return elementwise(o.getNewParam(), 14); })
      .Default([](Operation *) { return OpCost{}; });
}

TrainingStats mlir::tg::computeTrainingStats(func::FuncOp step) {
  TrainingStats stats;
  for (BlockArgument arg : step.getArguments()) {
    if (step.getArgAttr(arg.getArgNumber(), TGDialect::kParamAttrName)) {
      stats.parameters += numel(arg);
      stats.parameterBytes += numel(arg) * elementBytes(arg);
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
    OpCost &bucket = forward.contains(&op)       ? stats.forward
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
      if (def && forward.contains(def) && !llvm::isa<ConstantOp>(def) &&
          saved.insert(operand).second) {
        stats.savedActivationElements += numel(operand);
        stats.savedActivationBytes += numel(operand) * elementBytes(operand);
      }
    }
  }
  MemoryPlan plan = planMemory(step);
  stats.plannedPeakBytes = plan.arenaBytes;
  stats.maxLiveBytes = plan.maxLiveBytes;
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
  return forward;
}

std::string mlir::tg::getOpName(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = llvm::dyn_cast<NameLoc>(inner))
        return name.getName().str();
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    return name.getName().str();
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
    if (!forward.contains(&op) || llvm::isa<ConstantOp>(op))
      continue;
    for (Value result : op.getResults()) {
      SavedActivation a;
      // Reverse-graph readers; through reshapes to the op that computes.
      std::function<void(Value)> addReaders = [&](Value v) {
        for (Operation *user : v.getUsers()) {
          if (forward.contains(user) || user == ret)
            continue;
          if (llvm::isa<ReshapeOp>(user)) {
            addReaders(user->getResult(0));
            continue;
          }
          std::string what = user->getName().getStringRef().str();
          if (auto matmul = llvm::dyn_cast<MatmulOp>(user))
            what = matmul.getTransposeLhs() ? "weight gradient (tg.matmul)"
                                            : "input gradient (tg.matmul)";
          if (user->hasAttr(TGDialect::kRecomputedAttrName))
            what = "recomputed " + what;
          std::string reader = what + " of " + getOpName(user);
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
