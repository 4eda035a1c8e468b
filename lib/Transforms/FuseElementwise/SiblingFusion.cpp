//===- SiblingFusion.cpp - generics over the same loops -------------------===//
//
// Two generics over the same loops that read a common tensor become one
// multi-result generic.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TrainStep.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace mlir::tg::fusion {

/// Where two sibling generics fuse: at the later one, or at the earlier one
/// when the earlier's results are read before the later (SwiGLU's gradient
/// reads gate and up after the product that reads their recomputed
/// product), which then needs every operand of the later to exist there.
enum class SiblingPlace { None, AtLater, AtEarlier };

/// Whether every operand of `later` exists before `earlier` (same block),
/// or is a fresh init (tensor.empty, or a fill of one with a value that
/// exists there) that can move before it.
static bool operandsAvailableAt(linalg::GenericOp later, Operation *earlier) {
  // Block arguments are those of the common block or of one around it.
  auto before = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return true;
    Operation *inBlock = earlier->getBlock()->findAncestorOpInBlock(*def);
    return !inBlock || inBlock->isBeforeInBlock(earlier);
  };
  auto movableEmpty = [&](Value v) {
    auto empty = v.getDefiningOp<tensor::EmptyOp>();
    return before(v) || (empty && empty->getBlock() == earlier->getBlock() &&
                         empty->getNumOperands() == 0);
  };
  if (!llvm::all_of(later.getDpsInputs(), before))
    return false;
  for (Value init : later.getDpsInits()) {
    if (before(init) || movableEmpty(init))
      continue;
    auto fill = init.getDefiningOp<linalg::FillOp>();
    if (!fill || fill->getBlock() != earlier->getBlock() ||
        !before(fill.getInputs()[0]) || !movableEmpty(fill.getOutputs()[0]))
      return false;
  }
  return true;
}

/// Sibling fusion: two generics over the same loops that read a common
/// input become one generic with the results of both, so the shared input
/// is read once (a SiLU gradient and the up projection's gradient both read
/// the incoming gradient, gate and up). `earlier` must come before `later`
/// in their block. The fused op goes at `later` when none of `earlier`'s
/// results is read before it, else at `earlier` (SiblingPlace).
static SiblingPlace canFuseSiblings(
    linalg::GenericOp earlier, linalg::GenericOp later,
    const llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned> &inPlace) {
  if (earlier->getBlock() != later->getBlock() ||
      !earlier->isBeforeInBlock(later) || !earlier.hasPureTensorSemantics() ||
      !later.hasPureTensorSemantics() ||
      earlier.getNumLoops() != later.getNumLoops() ||
      earlier.getIteratorTypesArray() != later.getIteratorTypesArray() ||
      earlier.getStaticLoopRanges() != later.getStaticLoopRanges() ||
      llvm::any_of(earlier.getStaticLoopRanges(), ShapedType::isDynamic) ||
      earlier.getNumDpsInputs() + later.getNumDpsInputs() > kMaxFusedInputs)
    return SiblingPlace::None;
  // Fresh results only: a generic that updates a loop's iter_arg in place
  // (attention's running sums) stays where the loop's chain of in-place
  // updates has it.
  auto fresh = [](linalg::GenericOp op) {
    return llvm::all_of(op.getDpsInits(), [](Value init) {
      Operation *def = init.getDefiningOp();
      if (auto fill = dyn_cast_or_null<linalg::FillOp>(def))
        def = fill.getOutputs()[0].getDefiningOp();
      return isa_and_nonnull<tensor::EmptyOp>(def);
    });
  };
  if (!fresh(earlier) || !fresh(later))
    return SiblingPlace::None;
  Block *block = later->getBlock();
  bool readBeforeLater = false;
  for (Operation *user : earlier->getUsers()) {
    Operation *inBlock = block->findAncestorOpInBlock(*user);
    if (!inBlock || inBlock == later.getOperation())
      return SiblingPlace::None;
    readBeforeLater |= inBlock->isBeforeInBlock(later);
  }
  if (readBeforeLater) {
    // At `earlier`, `later` reads its inputs sooner: never a value written
    // after (tensor SSA), and before any in-place update that follows.
    return operandsAvailableAt(later, earlier) &&
                   onlyDependentsBetween(earlier, later)
               ? SiblingPlace::AtEarlier
               : SiblingPlace::None;
  }
  // Nor does a saved activation's copy move later (see shouldFuse), but
  // past fresh tensors only (the up projection's copy joins silu(g)·u, its
  // next reader): the f32 value lives no longer, and the product's
  // epilogue (its next reader) then writes both.
  if ((earlier->hasAttr(tg::kSavedCopyAttrName) &&
       !onlyFreshTensorsBetween(earlier, later)) ||
      overwrittenBetween(earlier, later) ||
      !readsBeforeUpdates(inPlace, earlier.getDpsInputs(), later))
    return SiblingPlace::None;
  return SiblingPlace::AtLater;
}

static linalg::GenericOp fuseSiblings(RewriterBase &rewriter,
                                      linalg::GenericOp a, linalg::GenericOp b,
                                      SiblingPlace place) {
  SmallVector<Value> inputs(a.getDpsInputs()), inits(a.getDpsInits());
  llvm::append_range(inputs, b.getDpsInputs());
  llvm::append_range(inits, b.getDpsInits());
  SmallVector<AffineMap> maps;
  auto mapsOf = [](linalg::GenericOp op, bool ins) {
    SmallVector<AffineMap> all = op.getIndexingMapsArray();
    unsigned n = op.getNumDpsInputs();
    return ins ? SmallVector<AffineMap>(all.begin(), all.begin() + n)
               : SmallVector<AffineMap>(all.begin() + n, all.end());
  };
  llvm::append_range(maps, mapsOf(a, true));
  llvm::append_range(maps, mapsOf(b, true));
  llvm::append_range(maps, mapsOf(a, false));
  llvm::append_range(maps, mapsOf(b, false));
  if (place == SiblingPlace::AtEarlier) {
    // b's fresh inits (operandsAvailableAt) move up to a.
    for (Value init : b.getDpsInits()) {
      Operation *def = init.getDefiningOp();
      if (!def || def->getBlock() != a->getBlock() || def->isBeforeInBlock(a))
        continue;
      if (auto fill = dyn_cast<linalg::FillOp>(def))
        if (Operation *empty = fill.getOutputs()[0].getDefiningOp();
            empty && empty->getBlock() == a->getBlock() &&
            a->isBeforeInBlock(empty))
          rewriter.moveOpBefore(empty, a);
      rewriter.moveOpBefore(def, a);
    }
  }
  rewriter.setInsertionPoint(place == SiblingPlace::AtEarlier ? a : b);
  Location loc = rewriter.getFusedLoc({a.getLoc(), b.getLoc()});
  unsigned na = a.getNumDpsInputs(), nb = b.getNumDpsInputs(),
           ra = a.getNumDpsInits();
  auto fused = linalg::GenericOp::create(
      rewriter, loc, ValueRange(inits).getTypes(), inputs, inits, maps,
      a.getIteratorTypesArray(),
      [&](OpBuilder &nested, Location, ValueRange args) {
        IRMapping map;
        Block *ba = a.getBody(), *bb = b.getBody();
        for (unsigned i = 0; i < na; ++i)
          map.map(ba->getArgument(i), args[i]);
        for (unsigned i = 0; i < nb; ++i)
          map.map(bb->getArgument(i), args[na + i]);
        for (unsigned i = 0; i < ra; ++i)
          map.map(ba->getArgument(na + i), args[na + nb + i]);
        for (unsigned i = 0; i < b.getNumDpsInits(); ++i)
          map.map(bb->getArgument(nb + i), args[na + nb + ra + i]);
        SmallVector<Value> yields;
        for (Block *body : {ba, bb}) {
          for (Operation &op : body->without_terminator())
            nested.clone(op, map);
          for (Value v : body->getTerminator()->getOperands())
            yields.push_back(map.lookupOrDefault(v));
        }
        linalg::YieldOp::create(nested, loc, yields);
      });
  if (a->hasAttr(tg::kSavedCopyAttrName) || b->hasAttr(tg::kSavedCopyAttrName))
    fused->setAttr(tg::kSavedCopyAttrName, rewriter.getUnitAttr());
  rewriter.replaceOp(a, fused.getResults().take_front(ra));
  rewriter.replaceOp(b, fused.getResults().drop_front(ra));
  return fused;
}

/// Fuses siblings (canFuseSiblings) until none are left; returns whether
/// it fused any.
bool fuseAllSiblings(
    Operation *root,
    const llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned> &inPlace) {
  IRRewriter rewriter(root->getContext());
  bool any = false, changed = true;
  while (changed) {
    changed = false;
    // Each fusion erases `later` and a partner before it in its block
    // (visited already) and creates an op that may take part again. No set
    // of erased ops: a new op can reuse an erased one's address, and
    // whether it does varies from run to run.
    SmallVector<linalg::GenericOp> generics;
    root->walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp later : generics) {
      for (OpOperand *operand : later.getDpsInputOperands()) {
        // Sharing pays for a tensor read over every loop: two optimizer
        // updates that share the learning rate stay apart.
        if (!later.getMatchingIndexingMap(operand).isPermutation())
          continue;
        Value input = operand->get();
        linalg::GenericOp partner;
        SiblingPlace place = SiblingPlace::None;
        for (Operation *user : input.getUsers()) {
          auto earlier = dyn_cast<linalg::GenericOp>(user);
          if (earlier && earlier != later &&
              llvm::any_of(earlier.getDpsInputOperands(),
                           [&](OpOperand *other) {
                             return other->get() == input &&
                                    earlier.getMatchingIndexingMap(other)
                                        .isPermutation();
                           }) &&
              (place = canFuseSiblings(earlier, later, inPlace)) !=
                  SiblingPlace::None) {
            partner = earlier;
            break;
          }
        }
        if (!partner)
          continue;
        fuseSiblings(rewriter, partner, later, place);
        changed = any = true;
        break;
      }
    }
  }
  return any;
}

} // namespace mlir::tg::fusion
