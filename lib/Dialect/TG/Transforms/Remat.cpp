//===- Remat.cpp - rematerialisation under a memory budget ----------------===//
//
// Forward values the reverse graph reads are either kept (live from the
// forward pass to their last use in the backward pass) or recomputed: their
// forward op is cloned into the reverse graph before its first use there,
// reading kept values (or other recomputed ones).
//
// Which values to keep is a minimum cut (as in Checkmate's LP relaxation and
// AOTAutograd's partitioner): every forward op is an edge in→out whose
// capacity is the bytes of keeping its results; an edge source→in with
// capacity λ·FLOPs charges recomputation; data dependences and the reverse
// graph's reads are infinite edges. A cut is a closed choice: everything a
// recomputed op reads is kept or recomputed. λ (bytes per FLOP) is the
// Lagrange multiplier of the budget constraint; the budget policy sweeps it,
// adds the per-layer checkpoint plans, evaluates every candidate with the
// exact memory planner (so the transient memory of recomputation counts) and
// takes the fewest-FLOPs plan whose planned peak fits.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/Transforms/Remat.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/Analysis/TrainingStats.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/LowPrecisionSaves.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Support/MinCut.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <queue>

namespace mlir::tg {
#define GEN_PASS_DEF_TGREMATPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

llvm::Expected<MemoryBudget> mlir::tg::parseMemoryBudget(StringRef text) {
  auto invalid = [&] {
    return llvm::createStringError(
        "invalid memory budget '" + text +
        "': expected bytes (e.g. 1073741824, 1.5GiB, 800MB, 512MiB) or a "
        "fraction of the planned peak of --remat=none (0.4 or 40%)");
  };
  StringRef t = text.trim();
  size_t numberEnd = 0;
  while (numberEnd < t.size() &&
         (llvm::isDigit(t[numberEnd]) || t[numberEnd] == '.' ||
          ((t[numberEnd] == 'e' || t[numberEnd] == 'E') && numberEnd > 0 &&
           numberEnd + 1 < t.size() && llvm::isDigit(t[numberEnd + 1]))))
    ++numberEnd;
  StringRef number = t.take_front(numberEnd),
            unit = t.drop_front(numberEnd).trim();
  double value;
  if (number.empty() || number.getAsDouble(value) || !std::isfinite(value) ||
      value <= 0)
    return invalid();
  MemoryBudget budget;
  if (unit == "%") {
    if (value > 100)
      return invalid();
    budget.fraction = value / 100;
    return budget;
  }
  if (unit.empty() && value <= 1 && number.contains('.')) {
    budget.fraction = value;
    return budget;
  }
  double scale = llvm::StringSwitch<double>(unit.lower())
                     .Cases({"", "b"}, 1)
                     .Case("kb", 1e3)
                     .Case("mb", 1e6)
                     .Case("gb", 1e9)
                     .Case("kib", 1024.0)
                     .Case("mib", 1024.0 * 1024)
                     .Case("gib", 1024.0 * 1024 * 1024)
                     .Default(0);
  if (scale == 0 || value * scale > 9e18)
    return invalid();
  budget.bytes = static_cast<int64_t>(value * scale);
  return budget;
}

namespace {

using tgc::MinCut;
constexpr int64_t kInfinite = MinCut::kInfinite;

//===----------------------------------------------------------------------===//
// The step: forward ops and what the reverse graph reads
//===----------------------------------------------------------------------===//

struct StepGraph {
  /// Forward ops other than constants, in schedule order.
  SmallVector<Operation *> forwardOps;
  llvm::DenseMap<Operation *, int> index;
  llvm::DenseSet<Operation *> forward; // constants included
  /// Forward ops with a result that a reverse-graph op reads.
  llvm::DenseSet<Operation *> readByBackward;
  /// The type tg-low-precision-saves keeps saved activations in (null: as
  /// they are).
  Type savedElement;
  /// ZeRO-3: parameters the reverse graph reads (the others would need a
  /// gather of their own to be read there).
  bool gatheredParameters = false;
  llvm::DenseSet<Value> parametersReadBackward;
};

/// A parameter argument of the step (tg.param).
bool isParameter(Value v) {
  auto arg = llvm::dyn_cast<BlockArgument>(v);
  auto func = arg ? llvm::dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                  : func::FuncOp();
  return func && func.getArgAttr(arg.getArgNumber(), TGDialect::kParamAttrName);
}

StepGraph analyzeStep(func::FuncOp step) {
  StepGraph graph;
  Block &body = step.getBody().front();
  llvm::SetVector<Operation *> slice = getForwardOps(step);
  for (Operation &op : body.without_terminator()) {
    if (!slice.contains(&op))
      continue;
    graph.forward.insert(&op);
    if (op.hasTrait<OpTrait::ConstantLike>())
      continue;
    graph.index[&op] = graph.forwardOps.size();
    graph.forwardOps.push_back(&op);
  }
  for (Operation &op : body.without_terminator()) {
    if (graph.forward.contains(&op))
      continue;
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && graph.index.count(def))
        graph.readByBackward.insert(def);
  }
  return graph;
}

bool isView(Operation *op) { return op->hasTrait<StorageView>(); }
/// Projections through weights: never recomputed unless a budget leaves no
/// other choice. The attention core (scores, softmax, P·V) is not one: like
/// Megatron's selective recomputation, it is recomputed when that pays.
bool isMatmulClass(Operation *op) { return op->hasTrait<MatrixProduct>(); }
StringRef annotation(Operation *op) {
  if (auto a = op->getAttrOfType<StringAttr>(TGDialect::kRematAttrName))
    return a.getValue();
  return "";
}
std::optional<int64_t> layerOf(Operation *op) {
  if (auto a = op->getAttrOfType<IntegerAttr>(TGDialect::kLayerAttrName))
    return a.getInt();
  return std::nullopt;
}
/// The bytes of keeping `op`'s results: in `savedElement` where
/// tg-low-precision-saves will keep them so.
int64_t keptBytes(Operation *op, Type savedElement) {
  int64_t bytes = 0;
  for (OpResult r : op->getResults())
    if (savedElement && isStorableInLowPrecision(r))
      bytes += getTypeBytes(
          llvm::cast<RankedTensorType>(r.getType()).clone(savedElement));
    else
      bytes += getValueBytes(r);
  return bytes;
}

/// The planned arena of `step` once its saved activations are kept in
/// `savedElement` (null: as they are).
int64_t plannedPeakOf(func::FuncOp step, Type savedElement) {
  if (!savedElement)
    return planMemory(step).arenaBytes;
  auto copy = llvm::cast<func::FuncOp>(step->clone());
  keepSavedActivationsIn(copy, savedElement);
  int64_t peak = planMemory(copy).arenaBytes;
  copy->erase();
  return peak;
}
struct Applied {
  int64_t extraFlops = 0;
  bool recomputesMatmul = false;      // one the user did not ask for
  llvm::DenseSet<Operation *> cloned; // forward ops that got a clone
};

/// Clones the ops of `recompute` that the reverse graph reads (and what they
/// need) before their first use there.
Applied applyRecompute(func::FuncOp step, const StepGraph &graph,
                       const llvm::DenseSet<Operation *> &recompute) {
  Applied applied;
  llvm::DenseMap<Operation *, Operation *> clones;
  OpBuilder b(step.getContext());
  std::function<Operation *(Operation *, Operation *)> materialize =
      [&](Operation *def, Operation *before) -> Operation * {
    if (Operation *clone = clones.lookup(def))
      return clone;
    IRMapping mapping;
    for (Value operand : def->getOperands())
      if (Operation *d = operand.getDefiningOp(); d && recompute.contains(d))
        mapping.map(operand,
                    materialize(d, before)->getResult(
                        llvm::cast<OpResult>(operand).getResultNumber()));
    b.setInsertionPoint(before);
    Operation *clone = b.clone(*def, mapping);
    clone->setAttr(TGDialect::kRecomputedAttrName, b.getUnitAttr());
    clone->removeAttr(TGDialect::kRematAttrName);
    clones[def] = clone;
    applied.cloned.insert(def);
    applied.extraFlops += getOpCost(clone).flops;
    if (isMatmulClass(def) && annotation(def) != "recompute")
      applied.recomputesMatmul = true;
    return clone;
  };

  Block &body = step.getBody().front();
  SmallVector<Operation *> reverseOps;
  for (Operation &op : body.without_terminator())
    if (!graph.forward.contains(&op))
      reverseOps.push_back(&op);
  for (Operation *op : reverseOps)
    for (OpOperand &use : op->getOpOperands()) {
      Operation *def = use.get().getDefiningOp();
      if (!def || !recompute.contains(def))
        continue;
      unsigned resultNumber = llvm::cast<OpResult>(use.get()).getResultNumber();
      use.set(materialize(def, op)->getResult(resultNumber));
    }
  return applied;
}

/// Ops inside a layer whose results only that layer's forward ops read: the
/// values layer checkpointing recomputes.
llvm::DenseSet<Operation *> layerInternalOps(const StepGraph &graph,
                                             int64_t belowLayer = INT64_MAX) {
  llvm::DenseSet<Operation *> internal;
  for (Operation *op : graph.forwardOps) {
    std::optional<int64_t> layer = layerOf(op);
    if (!layer || *layer >= belowLayer)
      continue;
    bool boundary = false;
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers())
        if (graph.forward.contains(user) && layerOf(user) != layer)
          boundary = true;
        else if (!graph.forward.contains(user) &&
                 user->hasTrait<OpTrait::IsTerminator>())
          boundary = true;
    if (!boundary)
      internal.insert(op);
  }
  return internal;
}

/// Applies the user annotations to a policy's choice.
void applyAnnotations(const StepGraph &graph,
                      llvm::DenseSet<Operation *> &set) {
  for (Operation *op : graph.forwardOps) {
    StringRef a = annotation(op);
    if (a == "save")
      set.erase(op);
    else if (a == "recompute")
      set.insert(op);
  }
}

/// The minimum cut for λ bytes per FLOP; matmul-class ops are recomputable
/// only when `allowMatmuls`.
llvm::DenseSet<Operation *> minCutPlan(const StepGraph &graph, double lambda,
                                       bool allowMatmuls) {
  int n = graph.forwardOps.size();
  const int source = 0, sink = 1;
  auto in = [](int i) { return 2 + 2 * i; };
  auto out = [](int i) { return 3 + 2 * i; };
  MinCut cut(2 + 2 * n);
  for (int i = 0; i < n; ++i) {
    Operation *op = graph.forwardOps[i];
    StringRef a = annotation(op);
    bool mayRecompute = a == "recompute" ||
                        (a != "save" && (allowMatmuls || !isMatmulClass(op)));
    // A view is free to recompute, so keep its operand instead (unless the
    // user pinned the view itself).
    bool mayKeep = a != "recompute" && (!isView(op) || a == "save");
    cut.addEdge(in(i), out(i),
                mayKeep ? keptBytes(op, graph.savedElement) : kInfinite);
    double charge = lambda * static_cast<double>(getOpCost(op).flops);
    cut.addEdge(source, in(i),
                mayRecompute ? static_cast<int64_t>(std::min(charge, 1e17))
                             : kInfinite);
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp();
          def && graph.index.count(def))
        cut.addEdge(out(graph.index.lookup(def)), in(i), kInfinite);
    if (graph.readByBackward.contains(op))
      cut.addEdge(out(i), sink, kInfinite);
  }
  std::vector<bool> sourceSide = cut.solve(source, sink);
  llvm::DenseSet<Operation *> recompute;
  for (int i = 0; i < n; ++i)
    if (!sourceSide[in(i)])
      recompute.insert(graph.forwardOps[i]);
  return recompute;
}

/// At most this many FLOPs per element of the value it stops keeping: an
/// op this cheap (elementwise, a norm, a gather) costs less to recompute
/// inside the backward kernel that reads it than to write and read back.
constexpr double kFusedRecomputeFlopsPerElement = 16;

/// Values a fused backward kernel recomputes from what the reverse graph
/// reads anyway (SiLU and SiLU·up from the kept gate and up projections,
/// RMSNorm's output from its kept input and weight, and a product's bf16
/// copy of those): cheap forward ops whose operands are all kept anyway
/// (read by the reverse graph, arguments, constants, views of those, or
/// recomputed this way themselves), so that recomputing them adds FLOPs and
/// keeps no new value alive.
llvm::DenseSet<Operation *> fusedRecomputePlan(const StepGraph &graph) {
  llvm::DenseSet<Operation *> recompute;
  llvm::DenseSet<Value> available;
  auto isAvailable = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def && graph.gatheredParameters && isParameter(v))
      return graph.parametersReadBackward.contains(v);
    return !def || def->hasTrait<OpTrait::ConstantLike>() ||
           graph.readByBackward.contains(def) || available.contains(v);
  };
  for (Operation *op : graph.forwardOps) {
    bool operandsKept = llvm::all_of(op->getOperands(), isAvailable);
    if (!operandsKept)
      continue;
    if (isView(op)) {
      for (Value r : op->getResults())
        available.insert(r);
      continue;
    }
    int64_t elements = 0;
    for (Value r : op->getResults())
      if (auto t = llvm::dyn_cast<RankedTensorType>(r.getType()))
        elements += t.getNumElements();
    bool cheap =
        elements > 0 && !isMatmulClass(op) &&
        static_cast<double>(getOpCost(op).flops) <=
            kFusedRecomputeFlopsPerElement * static_cast<double>(elements);
    // Ops the reverse graph does not read directly join too: a chain of
    // them (RMSNorm's output and its bf16 copy for a weight gradient) is
    // recomputed as far as a reader needs it, and no further.
    if (!cheap || annotation(op) == "save")
      continue;
    recompute.insert(op);
    for (Value r : op->getResults())
      available.insert(r);
  }
  return recompute;
}

/// Selective: bytes decide, FLOPs only break ties (2^-20 bytes per FLOP).
constexpr double kSelectiveLambda = 1.0 / (1 << 20);

struct Candidate {
  std::string label;
  llvm::DenseSet<Operation *> recompute;
  int64_t peak = 0, flops = 0;
  bool recomputesMatmul = false;
};

/// Applies a candidate to a copy of the step and plans its memory.
void evaluate(func::FuncOp step, Candidate &candidate, Type savedElement) {
  IRMapping mapping;
  auto copy = llvm::cast<func::FuncOp>(step->clone(mapping));
  llvm::DenseSet<Operation *> mapped;
  for (Operation *op : candidate.recompute)
    mapped.insert(mapping.lookup(op));
  StepGraph graph = analyzeStep(copy);
  Applied applied = applyRecompute(copy, graph, mapped);
  candidate.flops = applied.extraFlops;
  candidate.recomputesMatmul = applied.recomputesMatmul;
  candidate.peak = plannedPeakOf(copy, savedElement);
  copy->erase();
}

/// Why `op` is kept or recomputed under `policy`.
std::string reasonFor(Operation *op, bool recomputed, RematPolicy policy,
                      const std::string &candidate) {
  StringRef a = annotation(op);
  if (!a.empty())
    return ("annotated tg.remat = \"" + a + "\"").str();
  switch (policy) {
  case RematPolicy::None:
    if (recomputed)
      return "cheap, from values kept anyway: recomputed in the fused "
             "backward kernels";
    return "policy none keeps every value the reverse graph reads";
  case RematPolicy::Layers: {
    std::optional<int64_t> layer = layerOf(op);
    if (recomputed)
      return llvm::formatv(
                 "inside layer {0}: recomputed from the layer's input", *layer)
          .str();
    if (layer)
      return llvm::formatv("output of layer {0}: input of the next layer's "
                           "checkpoint",
                           *layer)
          .str();
    return "outside the transformer layers";
  }
  case RematPolicy::Selective:
    if (recomputed)
      return "cheap to recompute from kept values (min cut)";
    if (isMatmulClass(op))
      return "matmul output: never recomputed";
    return "recomputing it would keep as many bytes (min cut)";
  case RematPolicy::Budget:
    return (recomputed ? "recomputed" : "kept") + std::string(" by plan '") +
           candidate + "', the fewest-FLOPs plan that fits";
  }
  llvm_unreachable("unknown policy");
}

/// The budget policy's search: candidate plans (the Lagrangian sweep of
/// minimum cuts, with and without matmuls, and per-layer checkpointing
/// combined with the cheap cuts), each planned exactly on a copy of the
/// step; the one with the fewest extra FLOPs whose peak fits `bytes`, a plan
/// that recomputes a matmul only when nothing else fits.
FailureOr<Candidate> searchBudgetPlan(func::FuncOp step, const StepGraph &graph,
                                      int64_t bytes, bool hasLayers,
                                      int64_t &candidatesEvaluated) {
  std::vector<Candidate> candidates;
  auto add = [&](std::string label, llvm::DenseSet<Operation *> set) {
    applyAnnotations(graph, set);
    for (const Candidate &c : candidates)
      if (c.recompute == set)
        return;
    Candidate c{std::move(label), std::move(set)};
    evaluate(step, c, graph.savedElement);
    candidates.push_back(std::move(c));
  };
  add("none", {});
  add("selective", minCutPlan(graph, kSelectiveLambda, /*allowMatmuls=*/false));
  // The Lagrangian sweep; the plans without matmul recomputation also
  // combine with per-layer checkpointing below.
  std::vector<llvm::DenseSet<Operation *>> cheapPlans{
      {}, minCutPlan(graph, kSelectiveLambda, false)};
  for (int e = -20; e <= 12; e += 2) {
    double lambda = std::ldexp(1.0, e);
    for (bool allowMatmuls : {false, true}) {
      llvm::DenseSet<Operation *> plan =
          minCutPlan(graph, lambda, allowMatmuls);
      if (!allowMatmuls && !llvm::is_contained(cheapPlans, plan))
        cheapPlans.push_back(plan);
      add(llvm::formatv("min-cut λ=2^{0}{1}", e,
                        allowMatmuls ? " (matmuls allowed)" : "")
              .str(),
          std::move(plan));
    }
  }
  if (hasLayers) {
    int64_t numLayers = 0;
    for (Operation *op : graph.forwardOps)
      numLayers = std::max(numLayers, layerOf(op).value_or(-1) + 1);
    for (int64_t k = 1; k <= numLayers; ++k) {
      llvm::DenseSet<Operation *> checkpointed = layerInternalOps(graph, k);
      for (auto [i, cheap] : llvm::enumerate(cheapPlans)) {
        llvm::DenseSet<Operation *> mixed = cheap;
        for (Operation *op : checkpointed)
          mixed.insert(op);
        add(llvm::formatv("layers 0-{0} checkpointed + cut #{1}", k - 1, i)
                .str(),
            std::move(mixed));
      }
    }
  }
  candidatesEvaluated = candidates.size();
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate &a, const Candidate &b) {
                     return std::tie(a.flops, a.peak) <
                            std::tie(b.flops, b.peak);
                   });
  const Candidate *pick = nullptr;
  for (bool allowMatmuls : {false, true}) {
    for (const Candidate &c : candidates)
      if (c.peak <= bytes && (allowMatmuls || !c.recomputesMatmul)) {
        pick = &c;
        break;
      }
    if (pick)
      break;
  }
  if (!pick) {
    const Candidate *smallest = &candidates.front();
    for (const Candidate &c : candidates)
      if (c.peak < smallest->peak)
        smallest = &c;
    return mlir::emitError(step.getLoc(),
                           "tg-remat: no plan fits the memory budget of ")
           << formatBytes(bytes) << " (" << bytes
           << " bytes): the smallest planned peak is "
           << formatBytes(smallest->peak) << " (" << smallest->peak
           << " bytes, plan '" << smallest->label
           << "'); weights and optimizer state are not part of the budget";
  }
  return *pick;
}

} // namespace

FailureOr<RematResult> mlir::tg::rematerialize(func::FuncOp step,
                                               RematPolicy policy,
                                               MemoryBudget budget,
                                               bool fusedRecompute,
                                               Type savedElement,
                                               bool gatheredParameters) {
  RematResult result;
  result.policy = policy;
  StepGraph graph = analyzeStep(step);
  graph.savedElement = savedElement;
  graph.gatheredParameters = gatheredParameters;
  for (BlockArgument arg : step.getArguments())
    if (isParameter(arg) &&
        llvm::any_of(arg.getUsers(), [&](Operation *user) {
          // The optimizer reads the shard (ZeRO's tg.shard), not a gather.
          Operation *top = step.getBody().front().findAncestorOpInBlock(*user);
          return top && !graph.forward.contains(top) && !isa<ShardOp>(top) &&
                 !top->hasTrait<OptimizerStep>() &&
                 !top->hasTrait<ParameterUpdate>();
        }))
      graph.parametersReadBackward.insert(arg);
  result.plannedPeakWithout = plannedPeakOf(step, savedElement);

  bool hasLayers = llvm::any_of(
      graph.forwardOps, [](Operation *op) { return layerOf(op).has_value(); });
  llvm::DenseSet<Operation *> recompute;
  std::string chosen;
  // The plan of `none`: cheap ops recomputed in their fused readers, kept
  // only where the plan's peak falls (the planner weighs the bytes the
  // values free against what the recomputation holds alive). A budget's
  // fraction is of this plan's peak, the one `tgc stats` reports for remat
  // none, not of the step before it.
  llvm::DenseSet<Operation *> noneRecompute;
  int64_t nonePeak = result.plannedPeakWithout;
  if (fusedRecompute && (policy == RematPolicy::None ||
                         (policy == RematPolicy::Budget && budget.bytes < 0))) {
    Candidate fused{"fused recompute", fusedRecomputePlan(graph)};
    evaluate(step, fused, savedElement);
    if (!fused.recompute.empty() && fused.peak < nonePeak) {
      noneRecompute = std::move(fused.recompute);
      nonePeak = fused.peak;
    }
  }
  switch (policy) {
  case RematPolicy::None:
    recompute = std::move(noneRecompute);
    break;
  case RematPolicy::Layers:
    if (!hasLayers)
      return mlir::emitError(
          step.getLoc(),
          "tg-remat: --remat=layers needs ops tagged with their layer "
          "(tg.layer), as the model-file front end produces");
    recompute = layerInternalOps(graph);
    break;
  case RematPolicy::Selective:
    recompute = minCutPlan(graph, kSelectiveLambda, /*allowMatmuls=*/false);
    break;
  case RematPolicy::Budget: {
    if (!budget.isSet())
      return mlir::emitError(step.getLoc(),
                             "tg-remat: --remat=budget needs a memory budget");
    int64_t bytes = budget.bytes >= 0
                        ? budget.bytes
                        : static_cast<int64_t>(budget.fraction * nonePeak);
    result.budgetBytes = bytes;
    if (budget.bytes < 0)
      result.budgetOfBytes = nonePeak;

    FailureOr<Candidate> pick = searchBudgetPlan(step, graph, bytes, hasLayers,
                                                 result.candidatesEvaluated);
    if (failed(pick))
      return failure();
    recompute = pick->recompute;
    chosen = pick->label;
    break;
  }
  }
  if (policy != RematPolicy::Budget)
    applyAnnotations(graph, recompute);

  // Kept values first read in the reverse graph, as the decision report
  // lists them (before the rewrite changes who reads what).
  llvm::DenseSet<Operation *> readBefore = graph.readByBackward;
  Applied applied = applyRecompute(step, graph, recompute);
  result.extraFlops = applied.extraFlops;
  StepGraph after = analyzeStep(step);
  for (Operation *op : graph.forwardOps) {
    bool cloned = applied.cloned.contains(op);
    bool kept = after.readByBackward.contains(op);
    if (!cloned && !kept && !readBefore.contains(op))
      continue;
    RematDecision d;
    d.name = getOpName(op);
    d.op = op->getName().getStringRef().str();
    llvm::raw_string_ostream(d.type) << op->getResult(0).getType();
    d.bytes = keptBytes(op, savedElement);
    d.recomputed = cloned;
    d.flops = cloned ? getOpCost(op).flops : 0;
    d.reason = kept && !readBefore.contains(op)
                   ? "kept: a recomputed op reads it"
                   : reasonFor(op, cloned, policy, chosen);
    if (cloned && kept)
      d.reason += " (also kept: the reverse graph reads the original too)";
    result.decisions.push_back(std::move(d));
  }
  result.plannedPeak = plannedPeakOf(step, savedElement);
  return result;
}

void mlir::tg::printRematReport(llvm::raw_ostream &os, const RematResult &r) {
  os << "tg-remat: policy " << stringifyRematPolicy(r.policy);
  if (r.budgetBytes >= 0) {
    os << ", budget " << formatBytes(r.budgetBytes);
    if (r.budgetOfBytes >= 0)
      os << llvm::formatv(" ({0:F2} of remat none's planned peak, {1})",
                          double(r.budgetBytes) / double(r.budgetOfBytes),
                          formatBytes(r.budgetOfBytes));
    os << " (" << r.candidatesEvaluated << " candidate plans evaluated)";
  }
  os << "\n";
  int64_t keptBytes = 0, recomputedBytes = 0;
  for (const RematDecision &d : r.decisions) {
    os << llvm::formatv("  {0,-10} {1,12} {2,14} FLOPs  {3} ({4} {5}): {6}\n",
                        d.recomputed ? "recompute" : "keep",
                        formatBytes(d.bytes), d.flops, d.name, d.op, d.type,
                        d.reason);
    (d.recomputed ? recomputedBytes : keptBytes) += d.bytes;
  }
  os << llvm::formatv("  kept {0}, recomputed {1}, extra FLOPs {2}\n",
                      formatBytes(keptBytes), formatBytes(recomputedBytes),
                      r.extraFlops);
  os << llvm::formatv("  planned peak {0} (without rematerialisation {1})\n",
                      formatBytes(r.plannedPeak),
                      formatBytes(r.plannedPeakWithout));
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {
struct TGRematPass : tg::impl::TGRematPassBase<TGRematPass> {
  using Base::Base;

  void runOnOperation() override {
    MemoryBudget budget;
    if (!memoryBudget.empty()) {
      llvm::Expected<MemoryBudget> b = parseMemoryBudget(memoryBudget);
      if (!b) {
        mlir::emitError(getOperation().getLoc(), "tg-remat: ")
            << llvm::toString(b.takeError());
        return signalPassFailure();
      }
      budget = *b;
    }
    auto step = getOperation().lookupSymbol<func::FuncOp>(trainStepName);
    if (!step) {
      mlir::emitError(getOperation().getLoc(), "tg-remat: no function @")
          << trainStepName;
      return signalPassFailure();
    }
    Type saved = getLowPrecisionType(&getContext(), savedElementType);
    FailureOr<RematResult> result =
        rematerialize(step, policy, budget, fusedRecompute, saved,
                      gatheredParameters);
    if (failed(result))
      return signalPassFailure();
    if (report)
      printRematReport(llvm::errs(), *result);
  }
};
} // namespace
