//===- OutlineLoops.cpp - one function per top-level loop nest ------------===//
//
// See the pass description: keeps LLVM's per-function loop analyses linear
// in the number of loop nests of a train step.
//
//===----------------------------------------------------------------------===//

#include "tgc/Conversion/LoopBodies.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/MapVector.h"

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCOUTLINELOOPNESTSPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {

/// Ops cheaper to clone into the outlined function than to pass: constants
/// and views (whose layouts the bare-pointer convention cannot pass).
bool isClonable(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>() ||
         llvm::isa<memref::SubViewOp, memref::ExpandShapeOp,
                   memref::CollapseShapeOp, memref::CastOp,
                   memref::ReinterpretCastOp, memref::ViewOp>(op);
}

/// How many ops enclose `op`.
int64_t depthOf(Operation *op) {
  int64_t depth = 0;
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    ++depth;
  return depth;
}

/// Clones the clonable producers of values `region` uses from above into its
/// entry block, until only roots are left. The uses are rewritten by one
/// walk of the region per round: a constant such as `%c0` has thousands of
/// uses in a step, so rewriting through its use list made outlining
/// quadratic.
void sinkClonableProducers(Region &region) {
  Block &entry = region.front();
  while (true) {
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(region, above);
    SmallVector<Operation *> defs;
    for (Value value : above)
      if (Operation *def = value.getDefiningOp(); def && isClonable(def))
        defs.push_back(def);
    if (defs.empty())
      return;
    llvm::sort(defs);
    defs.erase(std::unique(defs.begin(), defs.end()), defs.end());
    // Each def sits in a block enclosing the region, one block per depth:
    // (depth, position in block) is a total order, operands first.
    llvm::sort(defs, [](Operation *a, Operation *b) {
      int64_t da = depthOf(a), db = depthOf(b);
      if (da != db)
        return da < db;
      return a->isBeforeInBlock(b);
    });
    OpBuilder b(&entry, entry.begin());
    IRMapping clones;
    for (Operation *def : defs) {
      Operation *clone = b.clone(*def);
      for (auto [from, to] : llvm::zip(def->getResults(), clone->getResults()))
        clones.map(from, to);
    }
    region.walk([&](Operation *op) {
      for (OpOperand &operand : op->getOpOperands())
        if (Value to = clones.lookupOrNull(operand.get()))
          operand.set(to);
    });
  }
}

bool containsParallelLoop(Operation *op) {
  return op->walk([](scf::ParallelOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

/// A value the outlined function can take as an argument.
bool isPassable(Value value) {
  auto memref = llvm::dyn_cast<MemRefType>(value.getType());
  if (!memref)
    return value.getType().isIntOrIndexOrFloat();
  return memref.hasStaticShape() && memref.getLayout().isIdentity();
}

/// Which storage `value` (an argument of the outlined function) lives in:
/// an alloc is its own, a global's is the global; an argument of the step
/// shares storage with the arguments of the same tg.param / tg.state name (the
/// runtime may update parameters and optimizer state in place) and with nothing
/// else. Null when unknown.
const void *storageOf(Value value, func::FuncOp step) {
  if (Operation *def = value.getDefiningOp()) {
    if (llvm::isa<memref::AllocOp>(def))
      return def;
    // Globals (e.g. RoPE tables): one storage per symbol.
    if (auto global = llvm::dyn_cast<memref::GetGlobalOp>(def))
      return global.getNameAttr().getAsOpaquePointer();
    return nullptr;
  }
  auto arg = llvm::dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner()->getParentOp() != step)
    return nullptr;
  for (StringRef role :
       {tg::TGDialect::kParamAttrName, tg::TGDialect::kStateAttrName})
    if (auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), role))
      return name.getAsOpaquePointer();
  return arg.getAsOpaquePointer();
}

/// storageOf each operand of `call` (null for non-memrefs); nullopt when a
/// memref's storage is unknown (it might alias any other).
std::optional<SmallVector<const void *>> storageOfOperands(func::CallOp call,
                                                           func::FuncOp step) {
  SmallVector<const void *> storage;
  for (Value operand : call.getOperands()) {
    if (!llvm::isa<MemRefType>(operand.getType())) {
      storage.push_back(nullptr);
      continue;
    }
    const void *s = storageOf(operand, step);
    if (!s)
      return std::nullopt;
    storage.push_back(s);
  }
  return storage;
}

/// Marks the outlined function's memref arguments `llvm.noalias` when each
/// lives in storage no other argument shares: distinct allocs, or distinct
/// buffers of the caller (allocs live at the same time never overlap in the
/// arena plan).
void markNoAlias(func::FuncOp outlined, func::CallOp call, func::FuncOp step) {
  std::optional<SmallVector<const void *>> storage =
      storageOfOperands(call, step);
  if (!storage)
    return;
  for (auto [i, s] : llvm::enumerate(*storage))
    if (s && llvm::count(*storage, s) == 1)
      outlined.setArgAttr(i, "llvm.noalias", UnitAttr::get(step.getContext()));
}

/// For a nest that reads a parameter (or optimizer state) and writes its
/// new value: the runtime passes one buffer for both when it updates in
/// place and distinct ones otherwise (evaluation into scratch buffers), never
/// overlapping ones. LLVM vectorises a loop over two pointers that may alias
/// only behind a run-time check that they are far apart, which fails when
/// they are equal, so every in-place update ran its scalar loop. The nest
/// gets versions chosen at run time by comparing the pointers: one where
/// each group of arguments that may share a buffer is one argument, one
/// where they are all distinct (in both every memref argument is noalias),
/// and, where some might be shared and others not, the nest as it was.
void versionSharedStorage(IRRewriter &rewriter, func::FuncOp outlined,
                          func::CallOp call, func::FuncOp step) {
  std::optional<SmallVector<const void *>> storage =
      storageOfOperands(call, step);
  if (!storage)
    return;
  llvm::MapVector<const void *, SmallVector<unsigned>> groups;
  for (auto [i, s] : llvm::enumerate(*storage))
    if (s)
      groups[s].push_back(i);
  SmallVector<SmallVector<unsigned>> shared;
  for (auto &[s, members] : groups) {
    if (members.size() < 2)
      continue;
    Type type = call.getOperand(members.front()).getType();
    if (llvm::any_of(members, [&](unsigned i) {
          return call.getOperand(i).getType() != type;
        }))
      return;
    shared.push_back(members);
  }
  if (shared.empty())
    return;
  // The versions; `outlined` becomes the dispatcher (its callers stay one
  // call: a parallel loop's body must stay one block for OpenMP).
  rewriter.setInsertionPointAfter(outlined);
  auto inPlace = llvm::cast<func::FuncOp>(rewriter.clone(*outlined));
  inPlace.setSymName((outlined.getSymName() + "_in_place").str());
  auto distinct = llvm::cast<func::FuncOp>(rewriter.clone(*outlined));
  distinct.setSymName((outlined.getSymName() + "_distinct").str());
  int64_t pairs = 0;
  for (ArrayRef<unsigned> members : shared)
    pairs += members.size() - 1;
  func::FuncOp mixed;
  if (pairs > 1) {
    mixed = llvm::cast<func::FuncOp>(rewriter.clone(*outlined));
    mixed.setSymName((outlined.getSymName() + "_some_shared").str());
  }
  Block &entry = inPlace.getBody().front();
  for (ArrayRef<unsigned> members : shared)
    for (unsigned i : members.drop_front())
      entry.getArgument(i).replaceAllUsesWith(
          entry.getArgument(members.front()));
  UnitAttr unit = rewriter.getUnitAttr();
  for (func::FuncOp version : {inPlace, distinct})
    for (auto [i, type] : llvm::enumerate(version.getArgumentTypes()))
      if (llvm::isa<MemRefType>(type))
        version.setArgAttr(i, "llvm.noalias", unit);

  Block &body = outlined.getBody().front();
  rewriter.eraseBlock(&body);
  Block *dispatch = rewriter.createBlock(
      &outlined.getBody(), {}, outlined.getArgumentTypes(),
      SmallVector<Location>(outlined.getNumArguments(), outlined.getLoc()));
  Location loc = outlined.getLoc();
  // All pairs equal, and (with several pairs) all pairs different.
  Value same, apart;
  for (ArrayRef<unsigned> members : shared) {
    auto pointer = [&](unsigned i) {
      return memref::ExtractAlignedPointerAsIndexOp::create(
          rewriter, loc, dispatch->getArgument(i));
    };
    Value first = pointer(members.front());
    for (unsigned i : members.drop_front()) {
      Value other = pointer(i);
      Value equal = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::eq, first, other);
      same = same ? arith::AndIOp::create(rewriter, loc, same, equal) : equal;
      if (!mixed)
        continue; // one pair: different is not equal
      Value different = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ne, first, other);
      apart = apart ? arith::AndIOp::create(rewriter, loc, apart, different)
                    : different;
    }
  }
  SmallVector<Value> operands(dispatch->getArguments());
  auto callOf = [&](func::FuncOp callee) {
    return [&, callee](OpBuilder &b, Location loc) {
      func::CallOp::create(b, loc, callee, operands);
      scf::YieldOp::create(b, loc);
    };
  };
  scf::IfOp::create(
      rewriter, loc, same, callOf(inPlace), [&](OpBuilder &b, Location loc) {
        if (mixed)
          scf::IfOp::create(b, loc, apart, callOf(distinct), callOf(mixed));
        else
          func::CallOp::create(b, loc, distinct, operands);
        scf::YieldOp::create(b, loc);
      });
  func::ReturnOp::create(rewriter, loc);
}

/// A hash of what `sameFunction` compares, cheap to compute: signature, op
/// names, result types, discardable attributes and callees (properties such
/// as constants' values are left to the comparison).
llvm::hash_code structuralHash(func::FuncOp func) {
  llvm::hash_code hash = llvm::hash_combine(
      func.getFunctionType().getAsOpaquePointer(),
      func.getArgAttrsAttr() ? func.getArgAttrsAttr().getAsOpaquePointer()
                             : nullptr);
  func.getBody().walk([&](Operation *op) {
    hash = llvm::hash_combine(hash, op->getName().getAsOpaquePointer(),
                              op->getNumOperands(), op->getNumRegions(),
                              op->getRawDictionaryAttrs().getAsOpaquePointer());
    for (Type type : op->getResultTypes())
      hash = llvm::hash_combine(hash, type.getAsOpaquePointer());
    if (auto call = llvm::dyn_cast<func::CallOp>(op))
      hash =
          llvm::hash_combine(hash, call.getCalleeAttr().getAsOpaquePointer());
  });
  return hash;
}

/// Whether `a` and `b` compute the same thing: one signature (with the same
/// noalias marks) and equivalent bodies up to locations.
bool sameFunction(func::FuncOp a, func::FuncOp b) {
  return a.getFunctionType() == b.getFunctionType() &&
         a.getArgAttrsAttr() == b.getArgAttrsAttr() &&
         a.getResAttrsAttr() == b.getResAttrsAttr() &&
         OperationEquivalence::isRegionEquivalentTo(
             &a.getBody(), &b.getBody(), OperationEquivalence::IgnoreLocations);
}

/// Keeps one of each set of identical outlined functions and calls it
/// instead of the others: a model's identical layers give identical loop
/// nests, and everything after outlining (the LLVM lowering, LLVM's
/// optimisation and code generation) then works on one layer's kernels, not
/// on L copies. Rounds repeat because callers (a parallel loop around its
/// outlined body) become identical once their callees are merged.
void mergeIdenticalFunctions(ModuleOp module) {
  while (true) {
    llvm::DenseMap<llvm::hash_code, SmallVector<func::FuncOp>> kept;
    llvm::DenseMap<StringAttr, FlatSymbolRefAttr> replacement;
    SmallVector<func::FuncOp> merged;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!func->hasAttr(tg::kOutlinedAttrName) || func.isExternal())
        continue;
      SmallVector<func::FuncOp> &candidates = kept[structuralHash(func)];
      auto same = llvm::find_if(
          candidates, [&](func::FuncOp k) { return sameFunction(k, func); });
      if (same == candidates.end()) {
        candidates.push_back(func);
        continue;
      }
      replacement[func.getSymNameAttr()] =
          FlatSymbolRefAttr::get(same->getSymNameAttr());
      merged.push_back(func);
    }
    if (merged.empty())
      return;
    module.walk([&](func::CallOp call) {
      if (auto to = replacement.lookup(call.getCalleeAttr().getAttr()))
        call.setCalleeAttr(to);
    });
    for (func::FuncOp func : merged)
      func.erase();
  }
}

struct TGCOutlineLoopNestsPass
    : tgc::cpu::impl::TGCOutlineLoopNestsPassBase<TGCOutlineLoopNestsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    IRRewriter rewriter(&getContext());
    // The steps: public functions, and private ones that hold a program's
    // body (generation's @prefill and @decode, whose C entry points come
    // later); not the nests this pass outlines.
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal() || func->hasAttr(tg::kOutlinedAttrName))
        continue;
      int index = 0;
      // The step's body, and the bodies of its loops that hold parallel
      // loops, at any depth (the fused loss's loop over row chunks,
      // attention's query and key tiles): those loops stay in place and
      // their bodies are outlined like the step's, so the matmuls' tiles
      // inside them get noalias buffers too.
      SmallVector<Block *> blocks;
      tgc::collectLoopBodies(
          func.getBody().front(),
          [](scf::ForOp loop) {
            return loop.getNumResults() == 0 && containsParallelLoop(loop);
          },
          blocks);
      SmallVector<SmallVector<Operation *>> nests;
      for (Block *block : blocks)
        for (auto loop : block->getOps<scf::ForOp>())
          if (loop.getNumResults() == 0 && !containsParallelLoop(loop))
            nests.push_back({loop});
      for (SmallVector<Operation *> &nest : nests)
        if (failed(outline(rewriter, func, nest, index)))
          return signalPassFailure();
      // The whole body of each parallel loop too (a matmul's tile: OpenMP's
      // outlined region would otherwise hide from LLVM which buffers are
      // distinct, and a body of several blocks cannot sit in the alloca
      // scope OpenMP conversion puts around it); failing that, its loops.
      nests.clear();
      for (Block *block : blocks)
        for (auto parallel : block->getOps<scf::ParallelOp>()) {
          Block &body = *parallel.getBody();
          SmallVector<Operation *> ops;
          for (Operation &op : body.without_terminator())
            ops.push_back(&op);
          if (!ops.empty())
            nests.push_back(ops);
        }
      for (SmallVector<Operation *> &nest : nests) {
        Block *body = nest.front()->getBlock();
        bool outlined = false;
        if (failed(outline(rewriter, func, nest, index, &outlined)))
          return signalPassFailure();
        if (outlined)
          continue;
        SmallVector<SmallVector<Operation *>> loops;
        for (auto loop : body->getOps<scf::ForOp>())
          if (loop.getNumResults() == 0)
            loops.push_back({loop});
        for (SmallVector<Operation *> &loop : loops)
          if (failed(outline(rewriter, func, loop, index)))
            return signalPassFailure();
      }
      // Then each parallel loop itself: OpenMP's translation extracts every
      // parallel region with an analysis of its whole enclosing function,
      // which in the step function made compile time quadratic in layers.
      nests.clear();
      for (Block *block : blocks)
        for (auto parallel : block->getOps<scf::ParallelOp>())
          nests.push_back({parallel});
      for (SmallVector<Operation *> &nest : nests)
        if (failed(outline(rewriter, func, nest, index)))
          return signalPassFailure();
    }
    mergeIdenticalFunctions(module);
  }

  /// Outlines `ops` (consecutive, in one block, their results unused after
  /// them) into a private function; `done` tells whether it happened
  /// (not when a captured value cannot be passed).
  LogicalResult outline(IRRewriter &rewriter, func::FuncOp func,
                        ArrayRef<Operation *> ops, int &index,
                        bool *done = nullptr) {
    if (done)
      *done = false;
    Location loc = ops.front()->getLoc();
    rewriter.setInsertionPoint(ops.front());
    auto region = scf::ExecuteRegionOp::create(rewriter, loc, TypeRange());
    Block *block = rewriter.createBlock(&region.getRegion());
    rewriter.setInsertionPointToEnd(block);
    auto yield = scf::YieldOp::create(rewriter, loc);
    for (Operation *op : ops)
      rewriter.moveOpBefore(op, yield);
    sinkClonableProducers(region.getRegion());

    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(region.getRegion(), captured);
    if (!llvm::all_of(captured, isPassable)) {
      // Back in place; the sunk clones are harmless.
      rewriter.inlineBlockBefore(block, region);
      rewriter.eraseOp(yield);
      rewriter.eraseOp(region);
      return success();
    }
    if (done)
      *done = true;
    func::CallOp call;
    std::string name = (func.getName() + "_nest" + llvm::Twine(index++)).str();
    FailureOr<func::FuncOp> outlined = outlineSingleBlockRegion(
        rewriter, loc, region.getRegion(), name, &call);
    if (failed(outlined))
      return region.emitError(
          "tgc-outline-loop-nests: cannot outline this loop nest");
    outlined->setPrivate();
    markNoAlias(*outlined, call, func);
    (*outlined)->setAttr(tg::kOutlinedAttrName, rewriter.getUnitAttr());
    // The region now only calls the function: replace it by the call.
    rewriter.moveOpBefore(call, region);
    rewriter.eraseOp(region);
    versionSharedStorage(rewriter, *outlined, call, func);
    return success();
  }
};

} // namespace
