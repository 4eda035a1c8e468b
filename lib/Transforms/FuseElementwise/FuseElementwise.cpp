//===- FuseElementwise.cpp - tgc-fuse-elementwise -------------------------===//

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TrainStep.h"
#include "tgc/Transforms/Passes.h"

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

namespace mlir::tg {
#define GEN_PASS_DEF_TGCFUSEELEMENTWISEPASS
#include "tgc/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {

/// For every function, its arguments that a result overwrites in place
/// (new parameters and state): (function, argument number) → result number.
llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned>
findInPlaceResults(ModuleOp module) {
  llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned> results;
  module.walk([&](func::FuncOp func) {
    for (const tg::InPlaceUpdate &u : tg::getInPlaceUpdates(func))
      if (u.old)
        results[{func, u.old.getArgNumber()}] = u.result;
  });
  return results;
}

constexpr unsigned kMaxFusedInputs = 40;

/// A producer with several readers is recomputed in each of them when it is
/// this cheap: a few scalar ops per element (SiLU is five) and no reads
/// other than its operands' elements. Its result then never goes through
/// memory; the ops are repeated once per reader.
constexpr unsigned kMaxRecomputedOps = 8;
constexpr unsigned kMaxRecomputingReaders = 3;

/// Whether `producer`, read by `readers` generics, is cheap to recompute in
/// each and moves fewer bytes that way: stored, it reads its inputs (I)
/// once, writes its result (E) and each reader reads it back; recomputed,
/// each reader reads the inputs: (readers − 1)·I < (readers + 1)·E. A SiLU
/// read twice passes (I = E); a sum of three gradients read three times
/// does not (I = 3E).
bool isCheapToRecompute(linalg::GenericOp producer, int64_t readers) {
  if (producer.getNumReductionLoops() != 0 || producer.getNumDpsInits() != 1 ||
      readers > kMaxRecomputingReaders)
    return false;
  // Sizes unknown (0: a dynamic shape): not recomputed.
  int64_t inputs = 0, result = tg::getValueBytes(producer->getResult(0));
  llvm::SmallPtrSet<Value, 4> seen;
  for (Value input : producer.getDpsInputs()) {
    int64_t bytes = tg::getValueBytes(input);
    if (bytes == 0 || result == 0)
      return false;
    if (seen.insert(input).second)
      inputs += bytes;
  }
  if ((readers - 1) * inputs >= (readers + 1) * result)
    return false;
  unsigned ops = 0;
  for (Operation &op : producer.getBody()->without_terminator()) {
    if (!isPure(&op) || op.getNumRegions() != 0 || isa<tensor::ExtractOp>(op))
      return false;
    ++ops;
  }
  return ops <= kMaxRecomputedOps;
}

/// Whether an op reading `inputs` may run at `at` (an op of `func`'s body
/// or nested in it): not after the op that overwrites one of them in place
/// (tg-schedule-updates puts updates inside the backward sweep; the runtime
/// passes the same buffer for the old and the new value).
bool readsBeforeUpdates(
    const llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned> &inPlace,
    ValueRange inputs, Operation *at) {
  auto func = at->getParentOfType<func::FuncOp>();
  if (!func || func.getBody().empty())
    return true;
  Block &body = func.getBody().front();
  at = body.findAncestorOpInBlock(*at);
  for (Value input : inputs) {
    auto arg = dyn_cast<BlockArgument>(input);
    if (!arg || arg.getOwner() != &body)
      continue;
    auto it = inPlace.find({func, arg.getArgNumber()});
    if (it == inPlace.end())
      continue;
    Operation *writer =
        tg::getUpdatingOp(body.getTerminator()->getOperand(it->second));
    if (!writer || !at)
      return false;
    writer = body.findAncestorOpInBlock(*writer);
    if (!writer || writer == at || writer->isBeforeInBlock(at))
      return false;
  }
  return true;
}

/// Whether an op between `reader` and `at` (in `at`'s block) overwrites in
/// place a tensor that `reader` reads (uses it as its destination), so that
/// moving the read to `at` would put it after the write: attention's
/// running max is updated in place in its loop after its old value is read.
/// Tensors the body reads directly count too: the fused loss gathers each
/// row's target logit before the exponentials overwrite the logits.
bool overwrittenBetween(linalg::GenericOp reader, Operation *at) {
  Block *block = at->getBlock();
  Operation *from = block->findAncestorOpInBlock(*reader);
  SmallVector<Value> inputs(reader.getDpsInputs());
  llvm::SetVector<Value> captured;
  getUsedValuesDefinedAbove(reader.getRegion(), captured);
  for (Value value : captured)
    if (isa<RankedTensorType>(value.getType()))
      inputs.push_back(value);
  auto overwrites = [&](OpOperand &use) {
    Operation *owner = use.getOwner();
    if (auto insert = dyn_cast<tensor::InsertSliceOp>(owner))
      return use.get() == insert.getDest();
    auto dps = dyn_cast<DestinationStyleOpInterface>(owner);
    return dps && dps.isDpsInit(&use);
  };
  // Usually the two are close: look at the ops between.
  constexpr int kScanLimit = 32;
  int between = 0;
  Operation *op = from ? from->getNextNode() : nullptr;
  for (; op && op != at && between < kScanLimit; op = op->getNextNode())
    ++between;
  if (from && op == at) {
    for (op = from->getNextNode(); op != at; op = op->getNextNode()) {
      WalkResult found = op->walk([&](Operation *inner) {
        for (OpOperand &operand : inner->getOpOperands())
          if (llvm::is_contained(inputs, operand.get()) && overwrites(operand))
            return WalkResult::interrupt();
        return WalkResult::advance();
      });
      if (found.wasInterrupted())
        return true;
    }
    return false;
  }
  // Otherwise the inputs' uses that lie between.
  for (Value input : inputs)
    for (OpOperand &use : input.getUses()) {
      Operation *inBlock = block->findAncestorOpInBlock(*use.getOwner());
      if (inBlock && (!from || from->isBeforeInBlock(inBlock)) &&
          inBlock->isBeforeInBlock(at) && overwrites(use))
        return true;
    }
  return false;
}

/// Where two sibling generics fuse: at the later one, or at the earlier one
/// when the earlier's results are read before the later (SwiGLU's gradient
/// reads gate and up after the product that reads their recomputed
/// product), which then needs every operand of the later to exist there.
enum class SiblingPlace { None, AtLater, AtEarlier };

/// Whether every operand of `later` exists before `earlier` (same block),
/// or is a fresh init (tensor.empty, or a fill of one with a value that
/// exists there) that can move before it.
bool operandsAvailableAt(linalg::GenericOp later, Operation *earlier) {
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

/// Fresh tensors, fills of them, reshapes and constants.
bool movesNoTensorData(Operation *op) {
  return isa<tensor::EmptyOp, linalg::FillOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp>(op) ||
         (isPure(op) && op->getNumRegions() == 0 && op->getNumOperands() == 0);
}

/// Whether the ops between `earlier` and `later` (at most a few) are only
/// those that read `earlier`'s results, directly or through each other (the
/// product that reads a recomputed SwiGLU output), and ops that move no
/// data. Moving `later` up then keeps its results alive only across what
/// needed `earlier` first, not across unrelated work (a gradient's norm
/// hoisted into the forward pass would keep it alive all step).
bool onlyDependentsBetween(Operation *earlier, Operation *later) {
  constexpr int kMaxOpsBetween = 32;
  llvm::SmallPtrSet<Operation *, 16> dependents{earlier};
  int between = 0;
  for (Operation *op = earlier->getNextNode(); op != later;
       op = op->getNextNode()) {
    if (!op || ++between > kMaxOpsBetween)
      return false;
    bool dependent = op->walk([&](Operation *inner) {
                         for (Value v : inner->getOperands())
                           if (Operation *def = v.getDefiningOp();
                               def && dependents.contains(def))
                             return WalkResult::interrupt();
                         return WalkResult::advance();
                       }).wasInterrupted();
    if (dependent) {
      dependents.insert(op);
      continue;
    }
    if (!movesNoTensorData(op))
      return false;
  }
  return true;
}

/// Whether only ops that move no data (fresh tensors, fills of them,
/// reshapes, constants; at most a few) lie between `earlier` and `later`.
bool onlyFreshTensorsBetween(Operation *earlier, Operation *later) {
  constexpr int kMaxOpsBetween = 8;
  int between = 0;
  for (Operation *op = earlier->getNextNode(); op != later;
       op = op->getNextNode())
    if (!op || ++between > kMaxOpsBetween || !movesNoTensorData(op))
      return false;
  return true;
}

/// Sibling fusion: two generics over the same loops that read a common
/// input become one generic with the results of both, so the shared input
/// is read once (a SiLU gradient and the up projection's gradient both read
/// the incoming gradient, gate and up). `earlier` must come before `later`
/// in their block. The fused op goes at `later` when none of `earlier`'s
/// results is read before it, else at `earlier` (SiblingPlace).
SiblingPlace canFuseSiblings(
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

linalg::GenericOp fuseSiblings(RewriterBase &rewriter, linalg::GenericOp a,
                               linalg::GenericOp b, SiblingPlace place) {
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
    SmallVector<linalg::GenericOp> generics;
    root->walk([&](linalg::GenericOp op) { generics.push_back(op); });
    llvm::DenseSet<Operation *> fusedAway;
    for (linalg::GenericOp later : generics) {
      if (fusedAway.contains(later))
        continue;
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
          if (earlier && earlier != later && !fusedAway.contains(earlier) &&
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
        fusedAway.insert(partner);
        fusedAway.insert(later);
        fuseSiblings(rewriter, partner, later, place);
        changed = any = true;
        break;
      }
    }
  }
  return any;
}

constexpr llvm::StringLiteral kPermutationAttr = "tgc.transpose_permutation";

/// One transpose per (tensor, permutation) where the tensor has no other
/// reader: the forward and backward lowerings of attention each transpose
/// the same saved queries, keys and values into heads; the later reuses the
/// earlier's result (which dominates it). What stays alive until the
/// backward pass is then the transposed tensor instead of the original, of
/// the same size, and the original's one reader is the transpose, into
/// which its producer (RoPE) can fuse. A tensor read otherwise, or always
/// alive (a parameter), keeps its transposes: reuse would keep a copy alive.
void reuseTransposes(func::FuncOp func) {
  DominanceInfo dominance(func);
  // Replaces each of `ops` by an earlier one of the same source that
  // `same` accepts and that dominates it.
  auto reuseEarlier = [&](ArrayRef<Operation *> ops,
                          function_ref<bool(Operation *, Operation *)> same) {
    llvm::DenseMap<Value, SmallVector<Operation *>> bySource;
    for (Operation *op : ops) {
      SmallVector<Operation *> &seen = bySource[op->getOperand(0)];
      auto earlier = llvm::find_if(seen, [&](Operation *candidate) {
        return same(candidate, op) &&
               dominance.properlyDominates(candidate, op);
      });
      if (earlier != seen.end()) {
        op->replaceAllUsesWith(*earlier);
        op->erase();
        continue;
      }
      seen.push_back(op);
    }
  };
  // Identical reshapes first (views: no storage), so that the transposes of
  // one reshaped tensor read one value.
  SmallVector<Operation *> reshapes;
  func.walk([&](Operation *op) {
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
      reshapes.push_back(op);
  });
  reuseEarlier(reshapes, [](Operation *a, Operation *b) {
    return OperationEquivalence::isEquivalentTo(
        a, b, OperationEquivalence::IgnoreLocations);
  });
  auto permutationOf = [](Operation *op) {
    return cast<linalg::TransposeOp>(op).getPermutation();
  };
  SmallVector<Operation *> transposes;
  func.walk([&](linalg::TransposeOp op) {
    Value input = op.getInput();
    if (op.hasPureTensorSemantics() && !isa<BlockArgument>(input) &&
        llvm::all_of(input.getUsers(), [&](Operation *user) {
          return isa<linalg::TransposeOp>(user) &&
                 permutationOf(user) == op.getPermutation();
        }))
      transposes.push_back(op);
  });
  reuseEarlier(transposes, [&](Operation *a, Operation *b) {
    return permutationOf(a) == permutationOf(b);
  });
}

/// The product behind `input` of a sum: a `linalg.matmul` of the default
/// layout (or a transposed-operand one) whose output starts from a zero
/// fill and whose result is read only by the sum, directly or through one
/// expand_shape read only by the sum. Null otherwise.
linalg::MatmulOp summedProduct(Value input, linalg::GenericOp sum) {
  Value value = input;
  if (auto expand = input.getDefiningOp<tensor::ExpandShapeOp>()) {
    if (!expand->hasOneUse())
      return {};
    value = expand.getSrc();
  }
  auto product = value.getDefiningOp<linalg::MatmulOp>();
  if (!product || !product.hasPureTensorSemantics() || !value.hasOneUse() ||
      product->getBlock() != sum->getBlock())
    return {};
  auto fill = product.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat())
             ? product
             : linalg::MatmulOp();
}

/// Whether `sum` is an elementwise loop whose result is the plain sum of
/// its inputs, each read once, over identity maps.
bool isPlainSum(linalg::GenericOp sum) {
  if (!sum.hasPureTensorSemantics() || sum.getNumDpsInits() != 1 ||
      sum.getNumReductionLoops() != 0 ||
      !llvm::all_of(sum.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Block *body = sum.getBody();
  int64_t inputs = sum.getNumDpsInputs();
  if (inputs < 2 || static_cast<int64_t>(body->getOperations().size()) !=
                        inputs) // inputs − 1 additions and the yield
    return false;
  for (Operation &op : body->without_terminator())
    if (!isa<arith::AddFOp>(op))
      return false;
  for (int64_t i = 0; i < inputs; ++i)
    if (!body->getArgument(i).hasOneUse())
      return false;
  return body->getArgument(inputs).use_empty();
}

/// A sum of products' results (the gradient of a tensor read by several
/// projections: dX = dQ·Wq + dK·Wk + dV·Wv) as one accumulation: each
/// product after the first accumulates into the previous one's output
/// instead of into a zero fill, and the sum's loop goes. The products stay
/// where they are (each later one reads the earlier's result, which
/// dominates it); the sum's result becomes the last product's (reshaped as
/// the sum read it).
void accumulateSummedProducts(func::FuncOp func) {
  SmallVector<linalg::GenericOp> sums;
  func.walk([&](linalg::GenericOp op) {
    if (isPlainSum(op))
      sums.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  for (linalg::GenericOp sum : sums) {
    SmallVector<linalg::MatmulOp> products;
    for (Value input : sum.getDpsInputs())
      if (linalg::MatmulOp product = summedProduct(input, sum))
        products.push_back(product);
    if (products.size() != sum.getDpsInputs().size() ||
        llvm::any_of(products, [&](linalg::MatmulOp p) {
          return p.getResultTypes() != products.front().getResultTypes();
        }))
      continue;
    llvm::sort(products, [](linalg::MatmulOp a, linalg::MatmulOp b) {
      return a->isBeforeInBlock(b);
    });
    Value acc = products.front().getResult(0);
    for (linalg::MatmulOp product : llvm::drop_begin(products)) {
      Operation *fill = product.getDpsInits()[0].getDefiningOp();
      rewriter.modifyOpInPlace(
          product, [&] { product.getDpsInitsMutable()[0].set(acc); });
      if (fill->use_empty())
        rewriter.eraseOp(fill);
      acc = product.getResult(0);
    }
    rewriter.setInsertionPoint(sum);
    Value result = acc;
    auto type = llvm::cast<RankedTensorType>(sum.getResultTypes()[0]);
    if (result.getType() != type) {
      // The sum read the products through expand_shapes of one form.
      auto expand =
          sum.getDpsInputs()[0].getDefiningOp<tensor::ExpandShapeOp>();
      result = tensor::ExpandShapeOp::create(rewriter, sum.getLoc(), type, acc,
                                             expand.getReassociationIndices());
    }
    rewriter.replaceOp(sum, result);
  }
}

/// The row task's insert of `forall`'s result `i`.
tensor::ParallelInsertSliceOp insertOfResult(scf::ForallOp forall, unsigned i) {
  for (Operation &op : forall.getTerminator().getYieldingOps())
    if (auto insert = dyn_cast<tensor::ParallelInsertSliceOp>(op))
      if (insert.getDest() == forall.getRegionIterArgs()[i])
        return insert;
  return {};
}

/// An elementwise loop that reads the rows a parallel task computes (a
/// norm's rows: convert-tg-to-linalg's row tasks) runs in the task, on
/// those rows while they are in its core's cache: the residual stream's
/// gradient, summed with a norm's input gradient, is written once instead
/// of the norm's gradient being written and both read back. Its other
/// inputs must exist before the tasks, and its result have the rows' type.
void fuseConsumersIntoTasks(func::FuncOp func) {
  DominanceInfo dominance(func);
  IRRewriter rewriter(func.getContext());
  SmallVector<scf::ForallOp> foralls;
  func.walk([&](scf::ForallOp forall) {
    if (forall.getRank() == 1)
      foralls.push_back(forall);
  });
  for (scf::ForallOp forall : foralls) {
    for (unsigned i = 0; i < forall.getNumResults(); ++i) {
      Value rows = forall.getResult(i);
      if (!rows.hasOneUse())
        continue;
      Operation *user = *rows.getUsers().begin();
      auto expand = dyn_cast<tensor::ExpandShapeOp>(user);
      Value full = rows;
      if (expand) {
        if (!expand->hasOneUse())
          continue;
        user = *expand->getUsers().begin();
        full = expand.getResult();
      }
      auto consumer = dyn_cast<linalg::GenericOp>(user);
      tensor::ParallelInsertSliceOp insert = insertOfResult(forall, i);
      if (!consumer || !insert || consumer->getBlock() != forall->getBlock() ||
          consumer.getNumDpsInits() != 1 ||
          consumer.getNumReductionLoops() != 0 ||
          consumer->getResult(0).getType() != full.getType() ||
          !llvm::is_contained(consumer.getDpsInputs(), full) ||
          !consumer.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>() ||
          !llvm::all_of(consumer.getIndexingMapsArray(),
                        [](AffineMap map) { return map.isIdentity(); }) ||
          !consumer.getBody()->getOps<linalg::IndexOp>().empty() ||
          !llvm::all_of(consumer.getDpsInputs(), [&](Value input) {
            return input == full || dominance.properlyDominates(input, forall);
          }))
        continue;
      // The other inputs as the tasks' [N, d] rows.
      rewriter.setInsertionPoint(forall);
      SmallVector<Value> matrices;
      for (Value input : consumer.getDpsInputs())
        matrices.push_back(input == full || !expand
                               ? input
                               : tensor::CollapseShapeOp::create(
                                     rewriter, consumer.getLoc(), input,
                                     expand.getReassociationIndices())
                                     .getResult());
      rewriter.setInsertionPoint(forall.getTerminator());
      RankedTensorType tileType = insert.getSourceType();
      SmallVector<Value> tiles;
      for (auto [input, matrix] :
           llvm::zip_equal(consumer.getDpsInputs(), matrices))
        tiles.push_back(input == full
                            ? insert.getSource()
                            : tensor::ExtractSliceOp::create(
                                  rewriter, consumer.getLoc(), tileType, matrix,
                                  insert.getMixedOffsets(),
                                  insert.getMixedSizes(),
                                  insert.getMixedStrides())
                                  .getResult());
      Value init = tensor::EmptyOp::create(rewriter, consumer.getLoc(),
                                           tileType.getShape(),
                                           tileType.getElementType());
      AffineMap identity = AffineMap::getMultiDimIdentityMap(tileType.getRank(),
                                                             func.getContext());
      auto tile = linalg::GenericOp::create(
          rewriter, consumer.getLoc(), TypeRange{tileType}, tiles, {init},
          SmallVector<AffineMap>(tiles.size() + 1, identity),
          SmallVector<utils::IteratorType>(tileType.getRank(),
                                           utils::IteratorType::parallel));
      rewriter.cloneRegionBefore(consumer.getRegion(), tile.getRegion(),
                                 tile.getRegion().end());
      rewriter.modifyOpInPlace(
          insert, [&] { insert.getSourceMutable().assign(tile.getResult(0)); });
      rewriter.replaceOp(consumer, full);
    }
  }
}

/// Whether `op` only widens its one input (`arith.extf` over identity
/// maps): the reverse graph's f32 view of a saved bf16/f16 copy.
bool isWideningCast(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Block *body = op.getBody();
  auto widen = dyn_cast<arith::ExtFOp>(body->front());
  return widen && widen.getIn() == body->getArgument(0) &&
         body->getTerminator()->getNumOperands() == 1 &&
         body->getTerminator()->getOperand(0) == widen.getResult();
}

/// What reads `v`, directly or through reshapes made outside parallel
/// tasks: slices taken in tasks (ops in an scf.forall) and loops
/// (`linalg.generic` inputs); false when anything else reads it.
bool collectNarrowableReads(Value v,
                            SmallVectorImpl<tensor::ExtractSliceOp> &slices,
                            SmallVectorImpl<OpOperand *> &loops) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user) &&
        !user->getParentOfType<scf::ForallOp>()) {
      if (!collectNarrowableReads(user->getResult(0), slices, loops))
        return false;
      continue;
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user)) {
      if (!slice->getParentOfType<scf::ForallOp>())
        return false;
      slices.push_back(slice);
      continue;
    }
    auto loop = dyn_cast<linalg::GenericOp>(user);
    if (!loop || !loop.isDpsInput(&use))
      return false;
    loops.push_back(&use);
  }
  return true;
}

/// Makes the loop that reads `use` read `narrow` (the same elements in a
/// narrower float type) and widen each element as it reads it.
void readWidening(RewriterBase &rewriter, OpOperand &use, Value narrow) {
  auto loop = cast<linalg::GenericOp>(use.getOwner());
  Type wideType = getElementTypeOrSelf(use.get().getType());
  BlockArgument arg = loop.getMatchingBlockArgument(&use);
  rewriter.modifyOpInPlace(loop, [&] {
    use.set(narrow);
    arg.setType(getElementTypeOrSelf(narrow.getType()));
  });
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(loop.getBody());
  Value wide = arith::ExtFOp::create(rewriter, loop.getLoc(), wideType, arg);
  rewriter.replaceAllUsesExcept(arg, wide, wide.getDefiningOp());
}

/// A cast that widens a saved bf16/f16 copy for the reverse graph, read
/// only by parallel tasks (the norms' tasks recomputing and differentiating
/// the norm of the saved residual stream; attention's gradient tasks
/// reading Q, K and V) and by loops through reshapes (attention's
/// rowsum(dO·O) reading O as heads), would be a pass of its own that writes
/// an f32 copy of the whole tensor for them to read back. Instead each
/// task slices the narrow tensor, and the loops that read it or its slices
/// widen each element as they read it (`arith.extf` in their bodies); any
/// other reader of a slice reads it widened in the task (a buffer of the
/// task's size, in its core's cache). The same values, without the f32
/// copy.
void fuseWideningIntoReaders(
    func::FuncOp func,
    const llvm::DenseMap<std::pair<Operation *, unsigned>, unsigned> &inPlace) {
  SmallVector<linalg::GenericOp> widenings;
  func.walk([&](linalg::GenericOp op) {
    if (op.hasPureTensorSemantics() && isWideningCast(op) &&
        !op->getParentOfType<scf::ForallOp>())
      widenings.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  for (linalg::GenericOp widening : widenings) {
    Value narrow = widening.getDpsInputs()[0];
    Type narrowType = getElementTypeOrSelf(narrow.getType());
    SmallVector<tensor::ExtractSliceOp> slices;
    SmallVector<OpOperand *> loops;
    if (!collectNarrowableReads(widening->getResult(0), slices, loops) ||
        (slices.empty() && loops.empty()))
      continue;
    // The reads of the narrow tensor move to its readers: nothing may
    // overwrite it in place before them.
    auto movableTo = [&](Operation *reader) {
      Operation *at = widening->getBlock()->findAncestorOpInBlock(*reader);
      return at && !overwrittenBetween(widening, at) &&
             readsBeforeUpdates(inPlace, ValueRange{narrow}, reader);
    };
    if (!llvm::all_of(slices,
                      [&](tensor::ExtractSliceOp s) { return movableTo(s); }) ||
        !llvm::all_of(
            loops, [&](OpOperand *use) { return movableTo(use->getOwner()); }))
      continue;
    // The reshapes between the cast and the slices, remade on the narrow
    // tensor next to their originals.
    llvm::DenseMap<Value, Value> narrowOf{{widening->getResult(0), narrow}};
    std::function<Value(Value)> narrowView = [&](Value wide) -> Value {
      if (Value known = narrowOf.lookup(wide))
        return known;
      Operation *reshape = wide.getDefiningOp();
      Value source = narrowView(reshape->getOperand(0));
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointAfter(reshape);
      Value remade;
      if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape))
        remade =
            tensor::CollapseShapeOp::create(rewriter, collapse.getLoc(), source,
                                            collapse.getReassociationIndices());
      else {
        auto expand = cast<tensor::ExpandShapeOp>(reshape);
        remade = tensor::ExpandShapeOp::create(
            rewriter, expand.getLoc(), expand.getResultType().clone(narrowType),
            source, expand.getReassociationIndices(),
            expand.getMixedOutputShape());
      }
      return narrowOf[wide] = remade;
    };
    for (tensor::ExtractSliceOp slice : slices) {
      rewriter.setInsertionPoint(slice);
      Location loc = slice.getLoc();
      auto narrowSlice = tensor::ExtractSliceOp::create(
          rewriter, loc,
          cast<RankedTensorType>(slice.getType().clone(narrowType)),
          narrowView(slice.getSource()), slice.getMixedOffsets(),
          slice.getMixedSizes(), slice.getMixedStrides());
      Value widened; // the slice widened in the task, made on demand
      for (OpOperand &use : llvm::make_early_inc_range(slice->getUses())) {
        auto reader = dyn_cast<linalg::GenericOp>(use.getOwner());
        if (reader && reader.isDpsInput(&use)) {
          readWidening(rewriter, use, narrowSlice);
          continue;
        }
        if (!widened) {
          Value init =
              tensor::EmptyOp::create(rewriter, loc, slice.getType().getShape(),
                                      getElementTypeOrSelf(slice.getType()));
          auto copy = linalg::GenericOp::create(
              rewriter, loc, TypeRange{slice.getType()},
              ValueRange{narrowSlice}, ValueRange{init},
              SmallVector<AffineMap>(2, rewriter.getMultiDimIdentityMap(
                                            slice.getType().getRank())),
              SmallVector<utils::IteratorType>(slice.getType().getRank(),
                                               utils::IteratorType::parallel));
          rewriter.cloneRegionBefore(widening.getRegion(), copy.getRegion(),
                                     copy.getRegion().end());
          widened = copy.getResult(0);
        }
        rewriter.modifyOpInPlace(use.getOwner(), [&] { use.set(widened); });
      }
      rewriter.eraseOp(slice);
    }
    for (OpOperand *use : loops)
      readWidening(rewriter, *use, narrowView(use->get()));
    // The wide reshapes and the cast, now unread.
    std::function<void(Value)> eraseUnread = [&](Value wide) {
      for (Operation *user : llvm::make_early_inc_range(wide.getUsers()))
        eraseUnread(user->getResult(0));
      if (wide.use_empty())
        rewriter.eraseOp(wide.getDefiningOp());
    };
    eraseUnread(widening->getResult(0));
  }
}

/// Transposes as generics for the duration of the fusion (a permuting copy
/// fuses with an elementwise producer or consumer: RoPE writes the heads'
/// layout, a gradient's layout change feeds RoPE's gradient directly);
/// those left unfused become linalg.transpose again.
void generalizeTransposes(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  SmallVector<linalg::TransposeOp> transposes;
  module.walk([&](linalg::TransposeOp op) {
    if (op.hasPureTensorSemantics())
      transposes.push_back(op);
  });
  for (linalg::TransposeOp op : transposes) {
    DenseI64ArrayAttr permutation = op.getPermutationAttr();
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generic =
        linalg::generalizeNamedOp(rewriter, op);
    if (succeeded(generic))
      (*generic)->setAttr(kPermutationAttr, permutation);
  }
}

void respecializeTransposes(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  SmallVector<linalg::GenericOp> generics;
  module.walk([&](linalg::GenericOp op) {
    if (op->hasAttr(kPermutationAttr))
      generics.push_back(op);
  });
  for (linalg::GenericOp op : generics) {
    auto permutation = op->getAttrOfType<DenseI64ArrayAttr>(kPermutationAttr);
    op->removeAttr(kPermutationAttr);
    // Still the permuting copy it was made from (a pattern may have folded
    // a constant input into it: then it stays a generic).
    Block *body = op.getBody();
    if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
        !llvm::hasSingleElement(*body) ||
        body->getTerminator()->getOperand(0) != body->getArgument(0))
      continue;
    rewriter.setInsertionPoint(op);
    rewriter.replaceOpWithNewOp<linalg::TransposeOp>(
        op, op.getDpsInputs()[0], op.getDpsInits()[0], permutation);
  }
}

struct TGCFuseElementwisePass
    : tg::impl::TGCFuseElementwisePassBase<TGCFuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    auto inPlace = findInPlaceResults(getOperation());
    // Fuses a producer into its consumer when the producer is an elementwise
    // linalg.generic whose only user is that consumer, or cheap to
    // recompute and read only by a few generics (each gets a copy, and the
    // producer's result is never stored), and the move does not make it
    // read a parameter or optimizer state after the op that overwrites it in
    // place (tg-schedule-updates puts updates inside the backward sweep; the
    // runtime passes the same buffer for the old and the new value).
    auto shouldFuse = [&](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      Operation *consumer = operand->getOwner();
      auto generic = dyn_cast_or_null<linalg::GenericOp>(producer);
      // Same block: fused into a loop's body, a producer outside it would
      // run once per iteration.
      if (!generic || !isa<linalg::GenericOp>(consumer) ||
          producer->getBlock() != consumer->getBlock())
        return false;
      // A saved activation's low-precision copy exists to be stored: fused
      // into its reader in the reverse graph, the f32 value it rounds would
      // stay alive in its place.
      if (generic->hasAttr(tg::kSavedCopyAttrName))
        return false;
      if (!producer->hasOneUse() &&
          (!isCheapToRecompute(generic,
                               llvm::range_size(producer->getUsers())) ||
           !llvm::all_of(producer->getUsers(), [](Operation *user) {
             return isa<linalg::GenericOp>(user);
           })))
        return false;
      // Bounded fan-in: a fused op is one GPU kernel, whose parameters
      // (several words per buffer) PTX limits to 4 KiB.
      if (generic.getNumDpsInputs() +
              llvm::cast<linalg::GenericOp>(consumer).getNumDpsInputs() >
          kMaxFusedInputs)
        return false;
      return !overwrittenBetween(generic, consumer) &&
             readsBeforeUpdates(inPlace, generic.getDpsInputs(), consumer);
    };
    getOperation().walk([](func::FuncOp func) {
      accumulateSummedProducts(func);
      reuseTransposes(func);
    });
    generalizeTransposes(getOperation());
    // A reshape between an elementwise loop and a layout change (attention
    // splits heads into groups: [.., S·G, D] ↔ [.., S, G, D]) is folded into
    // the loop by expanding its dimensions, so that the two can fuse.
    // Only there: upstream's folding elsewhere turns matmuls fed through
    // reshapes into higher-rank generic contractions.
    auto isLayoutChange = [](Operation *op) {
      return op && op->hasAttr(kPermutationAttr);
    };
    auto isElementwise = [](Operation *op) {
      auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
      return generic && generic.getNumReductionLoops() == 0 &&
             !generic->hasAttr(kPermutationAttr);
    };
    auto foldReshape = [&](OpOperand *operand) {
      Operation *owner = operand->getOwner();
      if (auto expand = dyn_cast<tensor::ExpandShapeOp>(owner))
        return isElementwise(operand->get().getDefiningOp()) &&
               llvm::all_of(expand->getUsers(), isLayoutChange);
      auto collapse = operand->get().getDefiningOp<tensor::CollapseShapeOp>();
      return collapse && isElementwise(owner) &&
             isLayoutChange(collapse.getSrc().getDefiningOp());
    };
    RewritePatternSet reshapes(&getContext());
    linalg::populateFoldReshapeOpsByExpansionPatterns(reshapes, foldReshape);
    if (failed(applyPatternsGreedily(getOperation(), std::move(reshapes))))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    FrozenRewritePatternSet frozen(std::move(patterns));
    if (failed(applyPatternsGreedily(getOperation(), frozen)))
      return signalPassFailure();
    // Siblings fused into multi-result generics can feed consumers again.
    if (fuseAllSiblings(getOperation(), inPlace) &&
        failed(applyPatternsGreedily(getOperation(), frozen)))
      return signalPassFailure();
    respecializeTransposes(getOperation());
    getOperation().walk([&](func::FuncOp func) {
      fuseConsumersIntoTasks(func);
      fuseWideningIntoReaders(func, inPlace);
    });
  }
};

} // namespace
