//===- MapKernels.cpp - parallel loops → GPU blocks and threads -----------===//
//
// tgc-gpu-map-kernels (see its description in Passes.td): every operation
// on a buffer becomes a parallel loop mapped to GPU blocks and threads, so
// that nothing but launches, views, the arena's allocations and host
// copies of control values stays on the host.
//
//===----------------------------------------------------------------------===//

#include "HostReads.h"
#include "tgc/Target/CUDA/Passes.h"

#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

namespace tgc::cuda {
#define GEN_PASS_DEF_TGCGPUMAPKERNELSPASS
#include "tgc/Target/CUDA/Passes.h.inc"
} // namespace tgc::cuda

using namespace mlir;

namespace {

using tgc::cuda::containsParallelLoop;

/// A loop of the host program: it holds kernels, and its own body (outside
/// them) reads no buffer contents but host copies. A loop whose views
/// depend on loaded values (the embedding gradient's scatter, row by token
/// id) is not one until those reads are of host copies.
bool isHostLoop(Operation *op) {
  auto loop = dyn_cast<scf::ForOp>(op);
  if (!loop || !containsParallelLoop(loop))
    return false;
  WalkResult reads =
      loop.getBody()->walk<WalkOrder::PreOrder>([](Operation *nested) {
        if (isa<scf::ParallelOp>(nested))
          return WalkResult::skip();
        if (isa<memref::LoadOp, memref::StoreOp>(nested) &&
            !tgc::cuda::isHostCopyAccess(nested))
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
  return !reads.wasInterrupted();
}

/// Ops that only compute buffer descriptors or manage storage: they stay on
/// the host, where the arena's pointers are known.
bool isHostBufferOp(Operation *op) {
  return isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
             memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
             memref::CastOp, memref::ReinterpretCastOp, memref::ViewOp>(op);
}

/// Whether `op` reads or writes buffer contents (and so must run on the
/// device).
bool touchesBufferContents(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        if (isa<memref::LoadOp, memref::StoreOp, memref::CopyOp,
                linalg::LinalgOp>(nested) &&
            !tgc::cuda::isHostCopyAccess(nested))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

struct TGCGPUMapKernelsPass
    : tgc::cuda::impl::TGCGPUMapKernelsPassBase<TGCGPUMapKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (threadsPerBlock < 1 || threadsPerBlock > 1024) {
      getOperation().emitError("tgc-gpu-map-kernels: threads-per-block must "
                               "be in 1..1024, got ")
          << static_cast<int64_t>(threadsPerBlock);
      return signalPassFailure();
    }
    constants.clear();
    if (failed(mapHostBlock(getOperation().getBody().front())) ||
        failed(sinkConstantBuffers()))
      return signalPassFailure();
    if (!deviceMemory)
      hoistOneBlockBuffers();
  }

  /// Run on the host, a block program of one block is canonicalised into
  /// its body, and its shared and per-thread buffers (memref.alloca) then
  /// sit in whatever host loop holds it: scf-to-cf ignores scf.for's
  /// allocation scope, so each iteration would grow the stack. Their
  /// contents never outlive the block (its phases write before they
  /// read): they move to the function's entry.
  void hoistOneBlockBuffers() {
    Block &entry = getOperation().getBody().front();
    getOperation().walk([&](scf::ParallelOp grid) {
      if (!grid->hasAttr(tgc::cuda::kBlockProgramAttrName))
        return;
      for (auto [lb, ub, step] : llvm::zip(
               grid.getLowerBound(), grid.getUpperBound(), grid.getStep())) {
        std::optional<int64_t> l = getConstantIntValue(lb),
                               u = getConstantIntValue(ub),
                               s = getConstantIntValue(step);
        if (!l || !u || !s || *u - *l > *s)
          return;
      }
      for (Operation &op : llvm::make_early_inc_range(*grid.getBody()))
        if (isa<memref::AllocaOp>(op) && op.getNumOperands() == 0)
          op.moveBefore(&entry, entry.begin());
    });
  }

  /// An index constant at the top of the function (one per value).
  Value indexConstant(int64_t value) {
    Value &constant = constants[value];
    if (!constant) {
      Block &entry = getOperation().getBody().front();
      OpBuilder b = OpBuilder::atBlockBegin(&entry);
      constant =
          arith::ConstantIndexOp::create(b, getOperation().getLoc(), value);
    }
    return constant;
  }
  llvm::DenseMap<int64_t, Value> constants;

  /// Each kernel reads constant buffers (RoPE's tables) through its own
  /// memref.get_global: kernel outlining then copies the global into the
  /// GPU module, where it lives in device memory.
  LogicalResult sinkConstantBuffers() {
    SmallVector<memref::GetGlobalOp> globals;
    getOperation().walk([&](memref::GetGlobalOp op) {
      if (!op->getParentOfType<scf::ParallelOp>())
        globals.push_back(op);
    });
    for (memref::GetGlobalOp global : globals) {
      for (OpOperand &use : llvm::make_early_inc_range(global->getUses())) {
        scf::ParallelOp kernel;
        for (Operation *p = use.getOwner(); p; p = p->getParentOp())
          if (auto loop = dyn_cast<scf::ParallelOp>(p))
            kernel = loop;
        if (!kernel)
          return use.getOwner()->emitError(
              "tgc-gpu-map-kernels: a constant buffer is used outside a "
              "kernel");
        OpBuilder b = OpBuilder::atBlockBegin(kernel.getBody());
        use.set(b.clone(*global)->getResult(0));
      }
      global->erase();
    }
    return success();
  }

  /// Maps the kernels of one block of the host program.
  LogicalResult mapHostBlock(Block &block) {
    // Loops holding kernels whose own body reads buffers: a scatter whose
    // columns become the threads, or else, when what it reads is small and
    // unchanged by it (an expert's row offsets), a host loop over host
    // copies; otherwise the loop runs whole in one thread.
    SmallVector<scf::ForOp> readingLoops;
    for (Operation &op : block)
      if (auto loop = dyn_cast<scf::ForOp>(&op))
        if (!isHostLoop(loop) && containsParallelLoop(loop))
          readingLoops.push_back(loop);
    for (scf::ForOp loop : readingLoops)
      if (!interchangeColumnLoop(loop))
        tgc::cuda::copyHostReads(loop, deviceMemory, kMaxHostCopyBytes);
    for (Operation &op : block)
      if (isHostLoop(&op) &&
          failed(mapHostBlock(*cast<scf::ForOp>(op).getBody())))
        return failure();
    sinkLoadedViews(block);
    if (failed(wrapHostWork(block)))
      return failure();
    SmallVector<scf::ParallelOp> kernels;
    for (Operation &op : block)
      if (auto loop = dyn_cast<scf::ParallelOp>(&op))
        if (!loop->hasAttr(tgc::cuda::kBlockProgramAttrName))
          kernels.push_back(loop);
    for (scf::ParallelOp loop : kernels)
      if (failed(mapToBlocksAndThreads(loop)))
        return failure();
    return success();
  }

  /// The largest buffer a host loop reads through a host copy: copies are
  /// of control values (offsets), not of data.
  static constexpr int64_t kMaxHostCopyBytes = 64 * 1024;

  /// Whether every element of `buffer` that thread `ivs` touches through
  /// an access with trailing indices `ivs` has those trailing coordinates
  /// in the buffer `loop` leaves in place: the buffer is loop-invariant,
  /// allocated in the loop (hoisted out), or a view whose trailing
  /// dimensions are whole dimensions of such a buffer.
  static bool trailingDimsPreserved(Value buffer, scf::ForOp loop,
                                    unsigned trailing) {
    Operation *def = buffer.getDefiningOp();
    if (!def || !loop->isAncestor(def))
      return true;
    if (isa<memref::AllocOp>(def))
      return true;
    auto keepsTrailing = [&](ArrayRef<ReassociationIndices> groups) {
      if (groups.size() < trailing)
        return false;
      for (const ReassociationIndices &group :
           ArrayRef(groups).take_back(trailing))
        if (group.size() != 1)
          return false;
      return true;
    };
    if (auto view = dyn_cast<memref::SubViewOp>(def)) {
      MemRefType source = view.getSourceType();
      unsigned rank = source.getRank();
      if (view.getType().getRank() != rank || rank < trailing)
        return false;
      for (unsigned d = rank - trailing; d < rank; ++d)
        if (view.getStaticOffsets()[d] != 0 ||
            view.getStaticStrides()[d] != 1 ||
            view.getStaticSizes()[d] != source.getDimSize(d))
          return false;
      return trailingDimsPreserved(view.getSource(), loop, trailing);
    }
    if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def))
      return keepsTrailing(collapse.getReassociationIndices()) &&
             trailingDimsPreserved(collapse.getSrc(), loop, trailing);
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(def))
      return keepsTrailing(expand.getReassociationIndices()) &&
             trailingDimsPreserved(expand.getSrc(), loop, trailing);
    return false;
  }

  /// The embedding gradient's scatter, `for t: row = id[t]; dW[row, :] +=
  /// dX[t, :]` (parallel loops over the columns inside a loop over tokens
  /// whose views depend on loaded ids), becomes `parallel over columns: for
  /// t: ...`: each thread owns a column and walks the tokens in order, so
  /// the sums are deterministic and in the CPU's order, without atomics.
  /// Legal when every access inside the column loops is indexed by the
  /// column indices in its trailing dimensions of buffers whose trailing
  /// dimensions the loop does not move (columns never meet). Returns
  /// whether it interchanged.
  bool interchangeColumnLoop(scf::ForOp loop) {
    SmallVector<scf::ParallelOp> columns;
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto parallel = dyn_cast<scf::ParallelOp>(op)) {
        columns.push_back(parallel);
        continue;
      }
      bool allowed = isa<memref::LoadOp, memref::AllocOp>(op) ||
                     isHostBufferOp(&op) ||
                     (op.getNumRegions() == 0 && isMemoryEffectFree(&op));
      if (!allowed)
        return false;
    }
    if (columns.empty())
      return false;
    scf::ParallelOp first = columns.front();
    unsigned numLoops = first.getNumLoops();
    for (scf::ParallelOp column : columns) {
      if (column.getNumResults() || column.getNumLoops() != numLoops ||
          containsNestedParallel(column))
        return false;
      for (auto [a, b] : llvm::zip(column.getOperands(), first.getOperands()))
        if (getConstantIntValue(a) != getConstantIntValue(b) ||
            !getConstantIntValue(a))
          return false;
      if (llvm::any_of(column.getLowerBound(),
                       [](Value v) { return !isConstantIntValue(v, 0); }) ||
          llvm::any_of(column.getStep(),
                       [](Value v) { return !isConstantIntValue(v, 1); }))
        return false;
      // The column indices: dimensions of one iteration are always 0.
      SmallVector<Value> ivs, unitIvs;
      for (auto [iv, ub] :
           llvm::zip(column.getInductionVars(), column.getUpperBound()))
        (isConstantIntValue(ub, 1) ? unitIvs : ivs).push_back(iv);
      unsigned trailing = ivs.size();
      if (trailing == 0)
        return false;
      WalkResult illegal = column.getBody()->walk([&](Operation *op) {
        Value buffer;
        ValueRange indices;
        if (auto load = dyn_cast<memref::LoadOp>(op)) {
          buffer = load.getMemRef();
          indices = load.getIndices();
        } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
          buffer = store.getMemRef();
          indices = store.getIndices();
        } else if (isa<memref::AllocOp, memref::AllocaOp>(op) ||
                   !isMemoryEffectFree(op)) {
          return isa<scf::YieldOp, scf::ReduceOp>(op) ? WalkResult::advance()
                                                      : WalkResult::interrupt();
        } else {
          return WalkResult::advance();
        }
        if (indices.size() < trailing ||
            !llvm::equal(indices.take_back(trailing), ivs) ||
            llvm::any_of(indices.drop_back(trailing),
                         [&](Value v) {
                           return !llvm::is_contained(unitIvs, v) &&
                                  column->isAncestor(
                                      v.getParentBlock()->getParentOp());
                         }) ||
            !trailingDimsPreserved(buffer, loop, trailing))
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
      if (illegal.wasInterrupted())
        return false;
    }

    // Scratch buffers: allocated once, before the columns' loop.
    OpBuilder b(loop);
    for (Operation &op : llvm::make_early_inc_range(*loop.getBody()))
      if (isa<memref::AllocOp>(op) && op.getNumOperands() == 0)
        op.moveBefore(loop);
    auto parallel =
        scf::ParallelOp::create(b, loop.getLoc(), first.getLowerBound(),
                                first.getUpperBound(), first.getStep());
    loop->moveBefore(parallel.getBody()->getTerminator());
    IRRewriter rewriter(loop.getContext());
    for (scf::ParallelOp column : columns) {
      Block *body = column.getBody();
      rewriter.eraseOp(body->getTerminator());
      rewriter.inlineBlockBefore(body, column, parallel.getInductionVars());
      rewriter.eraseOp(column);
    }
    return true;
  }

  /// Whether `memref` is an argument of the function that nothing in it
  /// writes (only loads read it): a load of it gives the same value
  /// wherever it moves.
  static bool isReadOnlyArgument(Value memref) {
    auto arg = dyn_cast<BlockArgument>(memref);
    return arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()) &&
           llvm::all_of(arg.getUsers(), [](Operation *user) {
             return isa<memref::LoadOp>(user);
           });
  }

  /// A view at a loaded offset outside any loop (the KV cache row a decode
  /// step writes: `at = position[0]; view = cache[at]`, a scatter of one
  /// token) read only by kernels: each of those kernels computes it again
  /// itself, from the load on, and the host keeps none of it. Only loads of
  /// read-only arguments (the positions) move: nothing can change what they
  /// read in between.
  void sinkLoadedViews(Block &block) {
    SmallVector<memref::LoadOp> loads;
    for (Operation &op : block)
      if (auto load = dyn_cast<memref::LoadOp>(op))
        if (isReadOnlyArgument(load.getMemRef()))
          loads.push_back(load);
    for (memref::LoadOp load : loads) {
      // The load and what is computed from it at host level, in order: pure
      // scalar ops and views.
      llvm::SetVector<Operation *> chain;
      chain.insert(load);
      bool onlyKernels = true;
      for (Operation &op :
           llvm::make_range(std::next(load->getIterator()), block.end())) {
        bool fromChain = llvm::any_of(op.getOperands(), [&](Value v) {
          return chain.contains(v.getDefiningOp());
        });
        if (!fromChain)
          continue;
        bool viewOrScalar =
            isHostBufferOp(&op) &&
            !isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(op);
        viewOrScalar |= op.getNumRegions() == 0 && isMemoryEffectFree(&op);
        if (!viewOrScalar) {
          onlyKernels = false;
          break;
        }
        chain.insert(&op);
      }
      // Every reader outside the chain must be inside a host-level kernel.
      SmallVector<scf::ParallelOp> kernels;
      for (Operation *op : chain)
        for (Operation *user : op->getUsers()) {
          if (chain.contains(user))
            continue;
          Operation *top = block.findAncestorOpInBlock(*user);
          auto kernel = dyn_cast_or_null<scf::ParallelOp>(top);
          if (!kernel || kernel == user ||
              kernel->hasAttr(tgc::cuda::kBlockProgramAttrName)) {
            onlyKernels = false;
            break;
          }
          if (!llvm::is_contained(kernels, kernel))
            kernels.push_back(kernel);
        }
      if (!onlyKernels || kernels.empty())
        continue;
      for (scf::ParallelOp kernel : kernels) {
        OpBuilder b = OpBuilder::atBlockBegin(kernel.getBody());
        IRMapping map;
        for (Operation *op : chain)
          b.clone(*op, map);
        for (Operation *op : chain)
          for (auto [from, to] :
               llvm::zip(op->getResults(), map.lookup(op)->getResults()))
            from.replaceUsesWithIf(to, [&](OpOperand &use) {
              return kernel->isAncestor(use.getOwner());
            });
      }
      for (Operation *op : llvm::reverse(chain))
        if (op->use_empty())
          op->erase();
    }
  }

  static bool containsNestedParallel(scf::ParallelOp op) {
    return op.getBody()
        ->walk([](scf::ParallelOp) { return WalkResult::interrupt(); })
        .wasInterrupted();
  }

  /// Wraps each run of host-level ops that touch buffer contents (with the
  /// pure ops between them) into a one-iteration parallel loop.
  LogicalResult wrapHostWork(Block &block) {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    SmallVector<Operation *> run;
    for (Operation *op : ops) {
      bool hostOnly = isHostBufferOp(op) || isa<scf::ParallelOp>(op) ||
                      op->hasTrait<OpTrait::IsTerminator>() || isHostLoop(op);
      if (!hostOnly && touchesBufferContents(op)) {
        run.push_back(op);
        continue;
      }
      if (!hostOnly && !run.empty() && op->getNumRegions() == 0 &&
          isMemoryEffectFree(op)) {
        run.push_back(op);
        continue;
      }
      if (failed(wrapRun(run)))
        return failure();
      run.clear();
    }
    return wrapRun(run);
  }

  LogicalResult wrapRun(SmallVector<Operation *> &run) {
    while (!run.empty() && !touchesBufferContents(run.back()))
      run.pop_back();
    if (run.empty())
      return success();
    llvm::SmallPtrSet<Operation *, 16> inRun(run.begin(), run.end());
    auto usedAfter = [&](Operation *op) {
      return llvm::any_of(op->getUsers(), [&](Operation *user) {
        Operation *ancestor = op->getBlock()->findAncestorOpInBlock(*user);
        return !ancestor || !inRun.contains(ancestor);
      });
    };
    Operation *first = run.front();
    SmallVector<Operation *> kept;
    for (Operation *op : run) {
      if (!usedAfter(op)) {
        kept.push_back(op);
        continue;
      }
      // A pure op on host values (an index constant) stays on the host.
      bool hostOperands = llvm::all_of(op->getOperands(), [&](Value v) {
        Operation *def = v.getDefiningOp();
        return !def || !inRun.contains(def);
      });
      if (!isMemoryEffectFree(op) || op->getNumRegions() || !hostOperands)
        return op->emitError("tgc-gpu-map-kernels: '")
               << op->getName()
               << "' computes a value from device memory that the host "
                  "program uses";
      op->moveBefore(first);
      inRun.erase(op);
    }
    if (kept.empty())
      return success();
    // A kernel allocates nothing: scratch buffers of a loop run whole on
    // one thread are allocated once before it (its iterations are
    // sequential) and planned in the arena like any other.
    for (Operation *op : kept) {
      SmallVector<memref::AllocOp> allocs;
      op->walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
      for (memref::AllocOp alloc : allocs) {
        if (alloc->getNumOperands())
          return alloc.emitError("tgc-gpu-map-kernels: a dynamically sized "
                                 "buffer inside a kernel");
        alloc->moveBefore(kept.front());
      }
    }
    OpBuilder b(kept.front());
    Location loc = kept.front()->getLoc();
    Value zero = indexConstant(0), one = indexConstant(1);
    auto kernel = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                          ValueRange{one}, ValueRange{one});
    Operation *terminator = kernel.getBody()->getTerminator();
    for (Operation *op : kept)
      op->moveBefore(terminator);
    return success();
  }

  /// A constant that `bound` never exceeds: itself, or the least of the
  /// bounded operands of a minimum (a padded chunk's rows, `min(size,
  /// rows left)`).
  static std::optional<int64_t> constantUpperBound(Value bound) {
    if (std::optional<int64_t> c = getConstantIntValue(bound))
      return c;
    Operation *def = bound.getDefiningOp();
    if (!isa_and_nonnull<arith::MinUIOp, arith::MinSIOp>(def))
      return std::nullopt;
    std::optional<int64_t> least;
    for (Value operand : def->getOperands())
      if (std::optional<int64_t> c = constantUpperBound(operand))
        if (*c >= 0 && (!least || *c < *least))
          least = c;
    return least;
  }

  /// Linearises `loop`'s iteration space onto blocks × threads. A bound
  /// known at run time only is mapped at its constant maximum, with a
  /// guard.
  LogicalResult mapToBlocksAndThreads(scf::ParallelOp loop) {
    if (loop.getNumResults())
      return loop.emitError(
          "tgc-gpu-map-kernels: parallel loops with reductions are not "
          "supported");
    SmallVector<int64_t> lower, upper, steps, trips;
    SmallVector<Value> runTimeUpper;
    int64_t total = 1;
    for (auto [lb, ub, step] : llvm::zip(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      std::optional<int64_t> l = getConstantIntValue(lb),
                             u = constantUpperBound(ub),
                             s = getConstantIntValue(step);
      if (!l || !u || !s || *s <= 0)
        return loop.emitError("tgc-gpu-map-kernels: the loop's lower bounds "
                              "and steps must be constants, its upper bounds "
                              "constants or bounded by one");
      lower.push_back(*l);
      upper.push_back(*u);
      steps.push_back(*s);
      runTimeUpper.push_back(getConstantIntValue(ub) ? Value() : ub);
      trips.push_back(std::max<int64_t>(0, (*u - *l + *s - 1) / *s));
      total *= trips.back();
    }
    MLIRContext *context = loop.getContext();
    IRRewriter rewriter(context);
    if (total == 0) {
      rewriter.eraseOp(loop);
      return success();
    }
    int64_t threads = std::min<int64_t>(threadsPerBlock, total);
    int64_t blocks = (total + threads - 1) / threads;
    Location loc = loop.getLoc();
    rewriter.setInsertionPoint(loop);
    auto constant = [&](int64_t v) { return indexConstant(v); };
    Value zero = constant(0), one = constant(1);
    auto grid =
        scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                ValueRange{constant(blocks)}, ValueRange{one});
    rewriter.setInsertionPoint(grid.getBody()->getTerminator());
    auto block =
        scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                ValueRange{constant(threads)}, ValueRange{one});
    rewriter.setInsertionPoint(block.getBody()->getTerminator());
    Value linear = arith::AddIOp::create(
        rewriter, loc,
        arith::MulIOp::create(rewriter, loc, grid.getInductionVars()[0],
                              constant(threads)),
        block.getInductionVars()[0]);
    Operation *insertBefore = block.getBody()->getTerminator();
    auto guard = [&](Value inBounds) {
      auto ifOp = scf::IfOp::create(rewriter, loc, inBounds,
                                    /*withElseRegion=*/false);
      insertBefore = ifOp.thenBlock()->getTerminator();
      rewriter.setInsertionPoint(insertBefore);
    };
    if (blocks * threads != total)
      guard(arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult,
                                  linear, constant(total)));
    // The innermost dimension varies fastest across neighbouring threads.
    SmallVector<Value> ivs(trips.size());
    Value rest = linear;
    for (int64_t d = static_cast<int64_t>(trips.size()) - 1; d >= 0; --d) {
      Value index = rest;
      if (d > 0) {
        index = arith::RemUIOp::create(rewriter, loc, rest, constant(trips[d]));
        rest = arith::DivUIOp::create(rewriter, loc, rest, constant(trips[d]));
      }
      if (steps[d] != 1)
        index = arith::MulIOp::create(rewriter, loc, index, constant(steps[d]));
      if (lower[d] != 0)
        index = arith::AddIOp::create(rewriter, loc, index, constant(lower[d]));
      ivs[d] = index;
    }
    // Threads past a run-time bound.
    Value withinRunTime;
    for (auto [iv, ub] : llvm::zip(ivs, runTimeUpper)) {
      if (!ub)
        continue;
      Value within = arith::CmpIOp::create(rewriter, loc,
                                           arith::CmpIPredicate::slt, iv, ub);
      withinRunTime =
          withinRunTime
              ? arith::AndIOp::create(rewriter, loc, withinRunTime, within)
              : within;
    }
    if (withinRunTime)
      guard(withinRunTime);
    Block *body = loop.getBody();
    rewriter.eraseOp(body->getTerminator());
    rewriter.inlineBlockBefore(body, insertBefore, ivs);
    rewriter.eraseOp(loop);

    auto identity = AffineMap::getMultiDimIdentityMap(1, context);
    auto mapping = [&](gpu::Processor processor) {
      return gpu::ParallelLoopDimMappingAttr::get(context, processor, identity,
                                                  identity);
    };
    if (failed(gpu::setMappingAttr(grid, {mapping(gpu::Processor::BlockX)})) ||
        failed(gpu::setMappingAttr(block, {mapping(gpu::Processor::ThreadX)})))
      return grid.emitError("tgc-gpu-map-kernels: cannot map the loop");
    // Parallel loops inside a thread run sequentially, as plain loops (the
    // GPU conversion handles nested parallel loops only directly in the
    // kernel body, not inside its sequential loops).
    SmallVector<scf::ParallelOp> nested;
    block.getBody()->walk(
        [&](scf::ParallelOp inner) { nested.push_back(inner); });
    for (scf::ParallelOp inner : nested)
      if (failed(sequentialize(inner)))
        return failure();
    return success();
  }

  /// Replaces `loop` (without reductions) by a nest of scf.for loops.
  LogicalResult sequentialize(scf::ParallelOp loop) {
    if (loop.getNumResults())
      return loop.emitError(
          "tgc-gpu-map-kernels: parallel loops with reductions are not "
          "supported");
    IRRewriter rewriter(loop.getContext());
    rewriter.setInsertionPoint(loop);
    SmallVector<Value> ivs;
    Location loc = loop.getLoc();
    for (auto [lb, ub, step] : llvm::zip(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      auto forOp = scf::ForOp::create(rewriter, loc, lb, ub, step);
      ivs.push_back(forOp.getInductionVar());
      rewriter.setInsertionPoint(forOp.getBody()->getTerminator());
    }
    Operation *insertBefore = &*rewriter.getInsertionPoint();
    Block *body = loop.getBody();
    rewriter.eraseOp(body->getTerminator());
    rewriter.inlineBlockBefore(body, insertBefore, ivs);
    rewriter.eraseOp(loop);
    return success();
  }
};

} // namespace
