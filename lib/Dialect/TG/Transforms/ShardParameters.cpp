//===- ShardParameters.cpp - ZeRO-3: parameters in shards -----------------===//
//
// Each process holds only its shard of every parameter; the readers of a
// whole parameter get it from an all-gather placed before them, one bucket
// per run of a unit's readers, started ahead. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/Analysis/GatherPrefetch.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace mlir::tg {
#define GEN_PASS_DEF_TGSHARDPARAMETERSPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// The unit a parameter is gathered with, as FSDP wraps modules: its name
/// up to the first numeric component ("model.layers.3"), or the whole name.
StringRef unitOf(StringRef name) {
  size_t start = 0;
  while (start < name.size()) {
    size_t end = name.find('.', start);
    if (end == StringRef::npos)
      end = name.size();
    StringRef part = name.slice(start, end);
    if (!part.empty() && llvm::all_of(part, [](char c) { return llvm::isDigit(c); }))
      return name.take_front(end);
    start = end + 1;
  }
  return name;
}

/// A maximal run of readers of one unit's whole parameters.
struct Run {
  StringRef unit;
  Operation *first = nullptr;
  /// The unit's parameters this run reads, in argument order, with their
  /// readers (operands) in the run.
  llvm::MapVector<BlockArgument, SmallVector<OpOperand *>> reads;
};

struct TGShardParametersPass
    : tg::impl::TGShardParametersPassBase<TGShardParametersPass> {
  using Base::Base;

  void runOnOperation() override {
    auto step = getOperation().lookupSymbol<func::FuncOp>(trainStepName);
    if (!step || !step.getBody().hasOneBlock()) {
      getOperation().emitError()
          << "tg-shard-parameters: no function @" << trainStepName
          << " with a body (run tg-shard-optimizer first)";
      return signalPassFailure();
    }
    auto processes =
        step->getAttrOfType<IntegerAttr>(TGDialect::kProcessesAttrName);
    if (!processes) {
      step.emitError("tg-shard-parameters: expects a step whose optimizer "
                     "state is sharded (tg-shard-optimizer before it)");
      return signalPassFailure();
    }
    if (prefetch < -1) {
      step.emitError("tg-shard-parameters: prefetch must be -1 (planned) or "
                     "non-negative, got ")
          << static_cast<int64_t>(prefetch);
      return signalPassFailure();
    }
    if (prefetch == -1 && maxPrefetch < 1) {
      step.emitError("tg-shard-parameters: max-prefetch must be positive, "
                     "got ")
          << static_cast<int64_t>(maxPrefetch);
      return signalPassFailure();
    }
    if (!(gatherBandwidth > 0) || !(computeRate > 0) ||
        !std::isfinite(gatherBandwidth) || !std::isfinite(computeRate)) {
      step.emitError("tg-shard-parameters: gather-bandwidth and "
                     "compute-rate must be positive, got ")
          << gatherBandwidth << " and " << computeRate;
      return signalPassFailure();
    }
    wholeOf.clear();
    if (failed(shard(step, processes.getInt())))
      signalPassFailure();
  }

  LogicalResult shard(func::FuncOp step, int64_t processes) {
    Block &body = step.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    auto fail = [&](Operation *at, const Twine &message) {
      return at->emitError("tg-shard-parameters: ") << message;
    };
    OpBuilder b(step.getContext());

    // ZeRO-1's gathers of the updated shards go: the step returns them.
    SmallVector<AllGatherStartOp> gathers;
    body.walk([&](AllGatherStartOp op) { gathers.push_back(op); });
    for (AllGatherStartOp gather : gathers) {
      for (Operation *user :
           llvm::make_early_inc_range(gather.getRequest().getUsers())) {
        auto wait = llvm::cast<CollectiveWaitOp>(user);
        size_t n = gather.getShards().size();
        for (auto [i, result] : llvm::enumerate(wait.getResults()))
          result.replaceAllUsesWith(gather.getShards()[i % n]);
        wait.erase();
      }
      gather.erase();
    }

    // Each parameter's readers of the whole tensor; tg.shard of it (the
    // updates' operand) becomes the argument itself.
    llvm::DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = i;
    struct Read {
      int64_t at;
      StringRef unit;
      BlockArgument param;
      OpOperand *operand;
    };
    SmallVector<Read> reads;
    SmallVector<BlockArgument> params;
    for (BlockArgument arg : step.getArguments()) {
      auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    TGDialect::kParamAttrName);
      if (!name)
        continue;
      // Frozen parameters may be narrower (tg-narrow-frozen): they are
      // sharded and gathered in their own type.
      auto type = llvm::cast<RankedTensorType>(arg.getType());
      bool frozen = step.getArgAttr(arg.getArgNumber(),
                                    TGDialect::kFrozenAttrName) != nullptr;
      if (!type.hasStaticShape() ||
          !(type.getElementType().isF32() ||
            (frozen && llvm::isa<FloatType>(type.getElementType()))))
        return fail(step, "parameter '" + name.getValue() +
                              "' is neither a statically shaped f32 tensor "
                              "nor a frozen float one: only those are "
                              "sharded");
      params.push_back(arg);
      for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
        Operation *owner = use.getOwner();
        if (llvm::isa<ShardOp>(owner))
          continue; // the shard is the argument itself below
        if (llvm::isa<func::ReturnOp>(owner))
          return fail(owner, "parameter '" + name.getValue() +
                                 "' is returned whole");
        Operation *top = body.findAncestorOpInBlock(*owner);
        reads.push_back({position[top], unitOf(name.getValue()), arg, &use});
      }
    }
    llvm::stable_sort(reads,
                      [](const Read &a, const Read &b) { return a.at < b.at; });

    // Runs of one unit's readers.
    SmallVector<Run> runs;
    for (const Read &read : reads) {
      if (runs.empty() || runs.back().unit != read.unit) {
        runs.emplace_back();
        runs.back().unit = read.unit;
        runs.back().first =
            body.findAncestorOpInBlock(*read.operand->getOwner());
      }
      runs.back().reads[read.param].push_back(read.operand);
    }

    // Each run's gathers, one per element type, and how far ahead each
    // starts (timed on the whole parameters' costs: before they change
    // type).
    SmallVector<llvm::MapVector<Type, SmallVector<BlockArgument>>> byTypes;
    for (Run &run : runs) {
      auto &byType = byTypes.emplace_back();
      for (auto &[param, operands] : run.reads)
        byType[gatheredElementType(operands)].push_back(param);
    }
    GatherPrefetchPlan plan = planLeads(body, runs, byTypes, processes);

    // Shards: the arguments change type; tg.shard of them is them.
    for (BlockArgument arg : params) {
      auto whole = llvm::cast<RankedTensorType>(arg.getType());
      RankedTensorType shardType = ShardOp::getShardType(whole, processes);
      for (Operation *user : llvm::make_early_inc_range(arg.getUsers()))
        if (auto cut = llvm::dyn_cast<ShardOp>(user)) {
          cut.getResult().replaceAllUsesWith(arg);
          cut.erase();
        }
      arg.setType(shardType);
      step.setArgAttr(arg.getArgNumber(), TGDialect::kShardedAttrName,
                      TypeAttr::get(whole));
      wholeOf[arg] = whole;
    }

    // One gather per run and element type, waited for right before the
    // run, started `leads[k]` runs ahead. A parameter the run reads only
    // through casts to one 16-bit type (mixed precision) is gathered in it:
    // its shard is cast, and the casts read the gathered tensor instead.
    IntegerAttr over = b.getI64IntegerAttr(processes);
    SmallVector<Operation *> runWaits; // each run's first wait
    // The last start placed after each wait (null: the step's start), so
    // that starts sharing a place keep the runs' order.
    llvm::DenseMap<Operation *, Operation *> lastStartAfter;
    for (auto [k, run] : llvm::enumerate(runs)) {
      auto &byType = byTypes[k];
      int64_t lead = plan.leads[k];
      Operation *anchor = lead > 0 && static_cast<int64_t>(k) >= lead
                              ? runWaits[k - lead]
                              : nullptr;
      Operation *firstWait = nullptr;
      SmallVector<std::pair<CastOp, Value>> castsRead;
      for (auto &[element, group] : byType) {
        if (lead == 0)
          b.setInsertionPoint(run.first);
        else if (Operation *last = lastStartAfter.lookup(anchor))
          b.setInsertionPointAfter(last);
        else if (anchor)
          b.setInsertionPointAfter(anchor);
        else
          b.setInsertionPointToStart(&body);
        SmallVector<Value> shards;
        SmallVector<Attribute> wholeTypes;
        for (BlockArgument param : group) {
          Value shard = param;
          auto shardType = llvm::cast<RankedTensorType>(param.getType());
          if (shardType.getElementType() != element)
            shard = CastOp::create(b, run.first->getLoc(),
                                   shardType.clone(element), param);
          shards.push_back(shard);
          wholeTypes.push_back(TypeAttr::get(wholeOf[param].clone(element)));
        }
        auto start = ParameterGatherStartOp::create(
            b, run.first->getLoc(), shards, b.getArrayAttr(wholeTypes), over);
        if (lead > 0)
          lastStartAfter[anchor] = start;
        b.setInsertionPoint(run.first);
        auto wait = CollectiveWaitOp::create(b, run.first->getLoc(),
                                             start.getRequest(),
                                             start->getResults().drop_back());
        if (!firstWait)
          firstWait = wait;
        for (auto [i, param] : llvm::enumerate(group)) {
          Value whole = wait.getResults()[shards.size() + i];
          bool low = shards[i] != param;
          for (OpOperand *operand : run.reads[param]) {
            if (!low) {
              operand->set(whole);
              continue;
            }
            castsRead.push_back({llvm::cast<CastOp>(operand->getOwner()),
                                 whole});
          }
        }
      }
      // (After the run's last wait: a cast may be the run's first op.)
      for (auto [cast, whole] : castsRead) {
        cast.getResult().replaceAllUsesWith(whole);
        cast.erase();
      }
      runWaits.push_back(firstWait);
    }

    // Each update writes its shard in place: after every gather reading it.
    for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
      if (!op.hasTrait<ParameterUpdate>())
        continue;
      auto param = llvm::dyn_cast<BlockArgument>(op.getOperand(0));
      if (!param || !wholeOf.count(param))
        continue;
      Operation *last = nullptr;
      for (Operation *user : param.getUsers()) {
        Operation *reader = body.findAncestorOpInBlock(*user);
        if (auto start = llvm::dyn_cast<ParameterGatherStartOp>(reader))
          reader = *start.getRequest().getUsers().begin();
        if (reader != &op && (!last || last->isBeforeInBlock(reader)))
          last = reader;
      }
      if (!last || last->isBeforeInBlock(&op))
        continue;
      for (Operation *user : op.getUsers())
        if (body.findAncestorOpInBlock(*user)->isBeforeInBlock(last))
          return fail(&op, "cannot move this update past the gathers that "
                           "read its parameter's shard");
      op.moveAfter(last);
    }

    // The step returns the updated shards.
    for (unsigned r = 0, e = ret.getNumOperands(); r < e; ++r) {
      auto name = step.getResultAttrOfType<StringAttr>(
          r, TGDialect::kParamAttrName);
      if (!name)
        continue;
      BlockArgument param;
      for (BlockArgument arg : params)
        if (step.getArgAttr(arg.getArgNumber(), TGDialect::kParamAttrName) ==
            name)
          param = arg;
      if (!param || ret.getOperand(r).getType() != param.getType())
        return fail(ret, "the new value of parameter '" + name.getValue() +
                             "' is not its shard");
      step.setResultAttr(r, TGDialect::kShardedAttrName,
                         TypeAttr::get(wholeOf[param]));
    }
    step.setFunctionType(FunctionType::get(
        step.getContext(), body.getArgumentTypes(), ret.getOperandTypes()));
    GatherPrefetchRecord{prefetch == -1,      plan.depth(),
                         plan.exposedSeconds, plan.transferSeconds,
                         gatherBandwidth,     computeRate}
        .writeTo(step);
    return success();
  }

  /// Each run's lead: `prefetch` for all, or planned on the time model
  /// (each op's FLOPs at compute-rate; the bytes a process receives of a
  /// gather at gather-bandwidth). Reads the parameters' whole types.
  GatherPrefetchPlan
  planLeads(Block &body, ArrayRef<Run> runs,
            ArrayRef<llvm::MapVector<Type, SmallVector<BlockArgument>>> byTypes,
            int64_t processes) {
    double flopsPerSecond = computeRate * 1e9;
    double bytesPerSecond = gatherBandwidth * 1e9;
    double computeBefore = 0;
    SmallVector<GatherRun> timed(runs.size());
    size_t next = 0; // the first run not yet reached
    for (Operation &op : body.without_terminator()) {
      while (next < runs.size() && runs[next].first == &op)
        ++next;
      double seconds = 0;
      op.walk([&](CostOpInterface costed) {
        seconds += static_cast<double>(costed.getCost().flops) / flopsPerSecond;
      });
      (next == 0 ? computeBefore : timed[next - 1].computeSeconds) += seconds;
    }
    for (auto [run, byType] : llvm::zip(timed, byTypes))
      for (auto &[element, group] : byType)
        for (BlockArgument param : group) {
          auto whole = llvm::cast<RankedTensorType>(param.getType());
          double bytes = static_cast<double>(whole.getNumElements()) *
                         element.getIntOrFloatBitWidth() / 8;
          run.transferSeconds += bytes * static_cast<double>(processes - 1) /
                                 processes / bytesPerSecond;
        }
    if (prefetch == -1)
      return planGatherPrefetch(computeBefore, timed, maxPrefetch);
    SmallVector<int64_t> fixed(runs.size(), prefetch);
    return simulateGatherPrefetch(computeBefore, timed, fixed);
  }

  /// The element type a run's readers of one parameter (`operands`) take it
  /// in: a 16-bit type when every one casts it to that type, else f32.
  static Type gatheredElementType(ArrayRef<OpOperand *> operands) {
    Type own = llvm::cast<RankedTensorType>(operands.front()->get().getType())
                   .getElementType();
    Type low;
    for (OpOperand *operand : operands) {
      auto cast = llvm::dyn_cast<CastOp>(operand->getOwner());
      if (!cast)
        return own;
      Type element =
          llvm::cast<RankedTensorType>(cast.getResult().getType())
              .getElementType();
      if (element.getIntOrFloatBitWidth() != 16 || (low && low != element))
        return own;
      low = element;
    }
    return low;
  }

  /// Each sharded parameter's whole type.
  llvm::DenseMap<Value, RankedTensorType> wholeOf;
};

} // namespace
