//===- ShardOptimizer.cpp - ZeRO-1: optimizer state in shards -------------===//
//
// Each process keeps and updates only its shard of every parameter's
// optimizer state: gradients are reduce-scattered instead of all-reduced,
// the update runs on shards, and the updated shards are all-gathered into
// the parameters. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGSHARDOPTIMIZERPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct TGShardOptimizerPass
    : tg::impl::TGShardOptimizerPassBase<TGShardOptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    auto step = getOperation().lookupSymbol<func::FuncOp>(trainStepName);
    if (!step || !step.getBody().hasOneBlock()) {
      getOperation().emitError()
          << "tg-shard-optimizer: no function @" << trainStepName
          << " with a body (run tg-autodiff and tg-optimizer first)";
      return signalPassFailure();
    }
    if (processes < 1) {
      step.emitError("tg-shard-optimizer: processes must be positive, got ")
          << processes;
      return signalPassFailure();
    }
    stateOwner.clear();
    dead.clear();
    if (failed(shard(step)))
      signalPassFailure();
  }

  LogicalResult shard(func::FuncOp step) {
    Block &body = step.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    auto fail = [&](Operation *at, const Twine &message) {
      return at->emitError("tg-shard-optimizer: ") << message;
    };
    SmallVector<AllReduceStartOp> starts;
    body.walk([&](AllReduceStartOp op) { starts.push_back(op); });
    if (starts.empty() || step->hasAttr(TGDialect::kProcessesAttrName))
      return fail(step, "expects a data-parallel step (tg-data-parallel, "
                        "then tg-optimizer) not sharded yet");
    for (unsigned r = 0, e = step.getNumResults(); r < e; ++r)
      if (step.getResultAttr(r, TGDialect::kGradAttrName))
        return fail(step, "the step returns gradients, but with ZeRO-1 a "
                          "process holds only its shard of each");

    OpBuilder b(step.getContext());
    IntegerAttr over = b.getI64IntegerAttr(processes);
    auto shardType = [&](Value v) {
      return ShardOp::getShardType(llvm::cast<RankedTensorType>(v.getType()),
                                   processes);
    };
    // What the step returns instead: for a parameter (keyed by its
    // argument) its gathered value, for an old update's state result the
    // sharded update's.
    DenseMap<Value, Value> newResult;

    for (AllReduceStartOp start : starts) {
      // The one wait of this start.
      if (!start.getRequest().hasOneUse())
        return fail(start, "expects one tg.collective_wait per collective");
      auto wait = llvm::dyn_cast<CollectiveWaitOp>(
          *start.getRequest().getUsers().begin());
      if (!wait)
        return fail(start, "expects one tg.collective_wait per collective");

      b.setInsertionPoint(start);
      auto scatter = ReduceScatterStartOp::create(
          b, start.getLoc(), start.getInputs(), start.getWeight(), over);
      b.setInsertionPoint(wait);
      SmallVector<Value> inFlight(scatter.getResults());
      llvm::append_range(inFlight, scatter.getShards());
      auto scatterWait = CollectiveWaitOp::create(
          b, wait.getLoc(), scatter.getRequest(), inFlight);
      ValueRange shards =
          scatterWait.getResults().drop_front(start.getInputs().size());

      // Each summed gradient feeds its sum of squares and its update,
      // possibly through the clipping factor.
      SmallVector<Value> params, updatedShards;
      Operation *lastUpdate = nullptr;
      for (auto [sum, gradShard] : llvm::zip(wait.getResults(), shards)) {
        Operation *update = nullptr;
        Value updateGrad = gradShard;
        for (Operation *user : llvm::make_early_inc_range(sum.getUsers())) {
          if (auto squares = llvm::dyn_cast<SumSquaresOp>(user)) {
            squares.getInputMutable().assign(gradShard);
            continue;
          }
          if (auto mul = llvm::dyn_cast<MulOp>(user);
              mul && mul.getResult().hasOneUse() &&
              mul.getResult().getUsers().begin()->hasTrait<ParameterUpdate>()) {
            b.setInsertionPoint(mul);
            Value other = mul.getLhs() == sum ? mul.getRhs() : mul.getLhs();
            updateGrad = MulOp::create(b, mul.getLoc(), gradShard, other);
            update = *mul.getResult().getUsers().begin();
            continue;
          }
          if (user->hasTrait<ParameterUpdate>() && !update) {
            update = user;
            continue;
          }
          return fail(user, "cannot shard this use of a summed gradient");
        }
        if (!update)
          return fail(wait, "a summed gradient has no optimizer update");
        FailureOr<Value> shardedParam =
            shardUpdate(b, step, update, updateGrad, newResult, shardType);
        if (failed(shardedParam))
          return failure();
        params.push_back(update->getOperand(0));
        updatedShards.push_back(*shardedParam);
        if (!lastUpdate || lastUpdate->isBeforeInBlock(update))
          lastUpdate = update;
      }
      // One all-gather per bucket, after its last update; waited for at the
      // end (tg-schedule-updates moves the wait earlier).
      b.setInsertionPointAfter(lastUpdate);
      auto gather = AllGatherStartOp::create(b, start.getLoc(), updatedShards,
                                             params, over);
      b.setInsertionPoint(ret);
      SmallVector<Value> gathered(gather.getSent());
      llvm::append_range(gathered, gather.getResults());
      auto gatherWait = CollectiveWaitOp::create(b, start.getLoc(),
                                                 gather.getRequest(), gathered);
      for (auto [param, whole] :
           llvm::zip(params, gatherWait.getResults().drop_front(params.size())))
        newResult[param] = whole;
    }

    // The old updates, clipping products and collectives are dead now.
    for (AllReduceStartOp start : starts) {
      Operation *wait = *start.getRequest().getUsers().begin();
      for (Value sum : wait->getResults())
        for (Operation *user : sum.getUsers())
          dead.insert(user);
      dead.insert(wait);
      dead.insert(start);
    }

    // The global norm: each process's sums cover its shards only.
    SmallVector<GlobalNormOp> norms;
    body.walk([&](GlobalNormOp op) { norms.push_back(op); });
    for (GlobalNormOp norm : norms) {
      b.setInsertionPoint(norm);
      auto total = SumOverProcessesOp::create(b, norm.getLoc(), norm.getSums());
      norm.getSumsMutable().assign(total.getResults());
    }

    // The step returns the gathered parameters and the new state shards.
    for (unsigned r = 0, e = ret.getNumOperands(); r < e; ++r) {
      Value value = ret.getOperand(r);
      // Only the updates rebuilt on shards (not, e.g., the loss scale's).
      Operation *def = value.getDefiningOp();
      if (!def || !dead.contains(def))
        continue;
      Value now = llvm::cast<OpResult>(value).getResultNumber() == 0
                      ? newResult.lookup(def->getOperand(0))
                      : newResult.lookup(value);
      if (!now)
        return fail(def, "an update the collectives do not cover");
      ret.setOperand(r, now);
      if (auto name = step.getResultAttrOfType<StringAttr>(
              r, TGDialect::kStateAttrName))
        step.setResultAttr(r, TGDialect::kShardOfAttrName,
                           stateOwner.lookup(name));
    }
    for (Operation *op : dead)
      op->dropAllUses();
    for (Operation *op : dead)
      op->erase();
    step.setFunctionType(FunctionType::get(
        step.getContext(), body.getArgumentTypes(), ret.getOperandTypes()));
    step->setAttr(TGDialect::kProcessesAttrName, over);
    return success();
  }

  /// Rebuilds `update` on shards: `tg.shard` of its parameter, the gradient
  /// shard `grad` and its state arguments, retyped to shards. Returns the
  /// updated parameter shard; records the new state in `newResult`.
  FailureOr<Value>
  shardUpdate(OpBuilder &b, func::FuncOp step, Operation *update, Value grad,
              DenseMap<Value, Value> &newResult,
              llvm::function_ref<RankedTensorType(Value)> shardType) {
    auto param = llvm::dyn_cast<BlockArgument>(update->getOperand(0));
    auto paramName =
        param ? step.getArgAttrOfType<StringAttr>(param.getArgNumber(),
                                                  TGDialect::kParamAttrName)
              : StringAttr();
    if (!paramName)
      return update->emitError(
          "tg-shard-optimizer: expects an update of a parameter argument");
    RankedTensorType type = shardType(param);
    b.setInsertionPoint(update);
    Value paramShard = ShardOp::create(b, update->getLoc(), param,
                                       b.getI64IntegerAttr(processes));
    SmallVector<Value> operands(update->getOperands());
    operands[0] = paramShard;
    operands[1] = grad;
    // State arguments (read by this update only) become shards.
    for (Value &operand : llvm::drop_begin(operands, 2)) {
      auto arg = llvm::dyn_cast<BlockArgument>(operand);
      if (!arg ||
          !step.getArgAttr(arg.getArgNumber(), TGDialect::kStateAttrName))
        continue;
      if (!arg.hasOneUse())
        return update->emitError("tg-shard-optimizer: optimizer state read "
                                 "by more than its update");
      arg.setType(type);
      step.setArgAttr(arg.getArgNumber(), TGDialect::kShardOfAttrName,
                      paramName);
      stateOwner[step.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), TGDialect::kStateAttrName)] = paramName;
    }
    OperationState state(update->getLoc(), update->getName(), operands,
                         SmallVector<Type>(update->getNumResults(), type),
                         update->getAttrs());
    Operation *sharded = b.create(state);
    for (auto [old, now] : llvm::zip(update->getResults().drop_front(),
                                     sharded->getResults().drop_front()))
      newResult[old] = now;
    dead.insert(update);
    return sharded->getResult(0);
  }

  /// The parameter whose state each sharded state argument holds.
  DenseMap<StringAttr, StringAttr> stateOwner;
  /// Ops the sharded ones replace, erased at the end.
  llvm::SetVector<Operation *> dead;
};

} // namespace
