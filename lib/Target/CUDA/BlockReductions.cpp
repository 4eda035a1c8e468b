//===- BlockReductions.cpp - reductions as block programs -----------------===//
//
// tgc-gpu-block-reductions: see its description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "BlockProgram.h"
#include "tgc/Target/CUDA/Passes.h"

#include "mlir/IR/IRMapping.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

namespace tgc::cuda {
#define GEN_PASS_DEF_TGCGPUBLOCKREDUCTIONSPASS
#include "tgc/Target/CUDA/Passes.h.inc"
} // namespace tgc::cuda

using namespace mlir;
using namespace tgc::cuda;

namespace {

/// A reduction `out = combine(out, value)`: the op, its combining op and
/// the loop structure.
struct Reduction {
  linalg::GenericOp op;
  Operation *combine;
  Value value; // the combined element, computed from inputs and indices
  unsigned numParallel;
  SmallVector<int64_t> ranges;
  int64_t outputs = 1, size = 1;
};

/// The neutral element of `combine`.
double identity(Operation *combine) {
  if (isa<arith::AddFOp>(combine))
    return 0.0;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combine))
    return -std::numeric_limits<double>::infinity();
  return std::numeric_limits<double>::infinity();
}

std::optional<Reduction> matchReduction(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned numParallel = 0;
  while (numParallel < iterators.size() &&
         iterators[numParallel] == utils::IteratorType::parallel)
    ++numParallel;
  if (numParallel == iterators.size() ||
      llvm::any_of(ArrayRef(iterators).drop_front(numParallel),
                   [](utils::IteratorType t) {
                     return t != utils::IteratorType::reduction;
                   }))
    return std::nullopt;
  for (OpOperand &operand : op->getOpOperands())
    if (!op.getMatchingIndexingMap(&operand).isProjectedPermutation())
      return std::nullopt;
  OpOperand *init = op.getDpsInitOperand(0);
  auto outType = dyn_cast<MemRefType>(init->get().getType());
  if (!outType ||
      (!outType.getElementType().isF32() && !outType.getElementType().isF64()))
    return std::nullopt;
  BlockArgument outArg = op.getMatchingBlockArgument(init);
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  Operation *combine = yield.getValues()[0].getDefiningOp();
  if (!combine || combine->getBlock() != op.getBody() ||
      !isa<arith::AddFOp, arith::MaximumFOp, arith::MaxNumFOp,
           arith::MinimumFOp, arith::MinNumFOp>(combine) ||
      !outArg.hasOneUse() || outArg.getUses().begin()->getOwner() != combine ||
      !combine->hasOneUse())
    return std::nullopt;
  Value value = combine->getOperand(0) == outArg ? combine->getOperand(1)
                                                 : combine->getOperand(0);
  if (value == outArg)
    return std::nullopt;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return std::nullopt;
  Reduction r;
  r.op = op;
  r.combine = combine;
  r.value = value;
  r.numParallel = numParallel;
  r.ranges = ranges;
  for (unsigned d = 0; d < ranges.size(); ++d)
    (d < numParallel ? r.outputs : r.size) *= ranges[d];
  return r;
}

struct TGCGPUBlockReductionsPass
    : tgc::cuda::impl::TGCGPUBlockReductionsPassBase<
          TGCGPUBlockReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (threads < 32 || threads > 1024 || !llvm::isPowerOf2_64(threads)) {
      getOperation().emitError("tgc-gpu-block-reductions: threads must be a "
                               "power of two in 32..1024");
      return signalPassFailure();
    }
    SmallVector<Reduction> reductions;
    getOperation().walk([&](linalg::GenericOp op) {
      if (std::optional<Reduction> r = matchReduction(op))
        if (r->size >= minSize && r->outputs > 0 &&
            r->outputs <= std::numeric_limits<int32_t>::max())
          reductions.push_back(*r);
    });
    for (Reduction &r : reductions) {
      build(r);
      r.op->erase();
    }
  }

  void build(Reduction &r) {
    int64_t blockThreads =
        std::clamp<int64_t>(llvm::PowerOf2Ceil(r.size), 32, threads);
    BlockProgramBuilder program(r.op, {r.outputs, 1, 1}, blockThreads);
    Location loc = program.getLoc();
    OpBuilder &b = program.body();
    unsigned numLoops = r.ranges.size();

    // The output element of this block: its parallel indices.
    SmallVector<Value> point(numLoops);
    Value rest = program.blockId(0);
    for (int64_t d = static_cast<int64_t>(r.numParallel) - 1; d >= 0; --d) {
      if (d == 0) {
        point[d] = rest;
        break;
      }
      point[d] =
          arith::RemUIOp::create(b, loc, rest, program.index(r.ranges[d]));
      rest = arith::DivUIOp::create(b, loc, rest, program.index(r.ranges[d]));
    }
    auto combine = [&](OpBuilder &builder, Value x, Value y) -> Value {
      Operation *combined = builder.clone(*r.combine);
      combined->setOperands({x, y});
      return combined->getResult(0);
    };
    auto operandIndices = [&](OpOperand &operand) {
      SmallVector<Value> indices;
      for (AffineExpr e : r.op.getMatchingIndexingMap(&operand).getResults())
        indices.push_back(point[cast<AffineDimExpr>(e).getPosition()]);
      return indices;
    };
    Type element = cast<MemRefType>(r.op.getDpsInitOperand(0)->get().getType())
                       .getElementType();
    Value partial = program.shared({blockThreads}, element);

    // Each thread combines elements t, t + T, t + 2T, ... of the reduction.
    program.phase(b, [&](OpBuilder &pb, Value t) {
      auto loop = scf::ForOp::create(
          pb, loc, t, program.index(r.size), program.index(blockThreads),
          ValueRange{program.floating(identity(r.combine),
                                      element.getIntOrFloatBitWidth())});
      OpBuilder lb = OpBuilder::atBlockTerminator(loop.getBody());
      // The reduction indices of element `linear`.
      Value linearIndex = loop.getInductionVar();
      for (int64_t d = numLoops - 1; d >= static_cast<int64_t>(r.numParallel);
           --d) {
        if (d == static_cast<int64_t>(r.numParallel)) {
          point[d] = linearIndex;
          break;
        }
        point[d] = arith::RemUIOp::create(lb, loc, linearIndex,
                                          program.index(r.ranges[d]));
        linearIndex = arith::DivUIOp::create(lb, loc, linearIndex,
                                             program.index(r.ranges[d]));
      }
      IRMapping mapping;
      for (OpOperand *input : r.op.getDpsInputOperands()) {
        BlockArgument arg = r.op.getMatchingBlockArgument(input);
        if (arg.use_empty())
          continue;
        mapping.map(arg, memref::LoadOp::create(lb, loc, input->get(),
                                                operandIndices(*input)));
      }
      for (Operation &op : r.op.getBody()->without_terminator()) {
        if (&op == r.combine)
          continue;
        if (auto index = dyn_cast<linalg::IndexOp>(op)) {
          mapping.map(index.getResult(), point[index.getDim()]);
          continue;
        }
        lb.clone(op, mapping);
      }
      Value element = mapping.lookupOrDefault(r.value);
      Value acc = combine(lb, loop.getRegionIterArgs()[0], element);
      scf::YieldOp::create(lb, loc, acc);
      memref::StoreOp::create(pb, loc, loop.getResult(0), partial,
                              ValueRange{t});
    });
    // Halve the partial results until one is left.
    for (int64_t half = blockThreads / 2; half >= 1; half /= 2) {
      program.phase(b, [&](OpBuilder &pb, Value t) {
        auto active = scf::IfOp::create(pb, loc, program.less(pb, t, half),
                                        /*withElseRegion=*/false);
        OpBuilder tb = active.getThenBodyBuilder();
        Value mine = memref::LoadOp::create(tb, loc, partial, ValueRange{t});
        Value other = memref::LoadOp::create(
            tb, loc, partial,
            ValueRange{program.add(tb, t, program.index(half))});
        memref::StoreOp::create(tb, loc, combine(tb, mine, other), partial,
                                ValueRange{t});
      });
    }
    program.phase(b, [&](OpBuilder &pb, Value t) {
      auto first = scf::IfOp::create(pb, loc, program.less(pb, t, 1),
                                     /*withElseRegion=*/false);
      OpBuilder tb = first.getThenBodyBuilder();
      OpOperand *init = r.op.getDpsInitOperand(0);
      SmallVector<Value> at = operandIndices(*init);
      Value old = memref::LoadOp::create(tb, loc, init->get(), at);
      Value total = memref::LoadOp::create(tb, loc, partial,
                                           ValueRange{program.index(0)});
      memref::StoreOp::create(tb, loc, combine(tb, old, total), init->get(),
                              at);
    });
  }
};

} // namespace
