//===- VectorizeMatmuls.cpp - CPU tiling and vectorisation of matmuls -----===//
//
// Transform-dialect schedules for matmuls of any static shape (after
// shared/recipes/cpu-any-shape): parallel output tiles, a K cache tile,
// MR x NR register tiles with their loops peeled (remainders in whole
// vectors, then single rows), each tile vectorised with its own sizes, then
// FMAs. Tile sizes come from a model of the target CPU (vector width,
// registers, caches); see the pass description.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CPU/Passes.h"

#include "BF16Products.h"
#include "tgc/Target/CPU/TileModel.h"
#include "tgc/Target/ProductFusion.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Parser/Parser.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <map>

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCVECTORIZEMATMULSPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;
using namespace tgc::cpu;

namespace {

constexpr llvm::StringLiteral kScheduleAttr = "tgc.matmul_schedule";
/// Marks tiles of the peeled whole-vector column loop: their width is one
/// vector even where the bound is too indirect for the peeling's own
/// simplification to make it static.
constexpr llvm::StringLiteral kFullVectorAttr = "tgc.full_vector_columns";

const char *kHeader = "module attributes {transform.with_named_sequence} {\n"
                      "transform.named_sequence @__transform_main(%root: "
                      "!transform.any_op {transform.readonly}) {\n";
const char *kFooter = "  transform.yield\n}\n}\n";

/// Phase 1: parallel output tiles (and batch entries).
std::string forallSchedule(const std::map<std::string, MatmulTiles> &configs) {
  std::string s = kHeader;
  llvm::raw_string_ostream os(s);
  for (auto &[key, t] : configs)
    os << llvm::formatv(
        "  %mm_{0} = transform.structured.match ops{{[\"linalg.matmul\", "
        "\"linalg.batch_matmul\"]} "
        "attributes{{{1} = \"{0}\"} in %root : (!transform.any_op) -> "
        "!transform.any_op\n"
        "  %p_{0}, %pl_{0} = transform.structured.tile_using_forall %mm_{0} "
        "tile_sizes "
        "[{2}{3}, {4}] : (!transform.any_op) -> (!transform.any_op, "
        "!transform.any_op)\n",
        key, kScheduleAttr, t.batched ? "1, " : "", t.mt, t.nt);
  os << kFooter;
  return s;
}

/// Phase 2, on 2-D matmuls inside the output tiles: K cache tile, MR x NR
/// register tiles. The j loop is peeled and its remainder tiled by whole
/// vectors (peeled again: only the last < lanes columns stay partial); the
/// i loop is peeled and its remainder done a row at a time. The unit K loop
/// comes last, so every variant has the accumulators' loop innermost.
std::string registerSchedule(const std::map<std::string, MatmulTiles> &configs,
                             int64_t lanes) {
  std::string s = kHeader;
  llvm::raw_string_ostream os(s);
  // Each loop of `handle` on its own (one handle holds the loops of every
  // matmul of a configuration).
  auto peel = [&](StringRef handle, StringRef name, StringRef rest) {
    os << llvm::formatv("  transform.foreach {0} : !transform.any_op {{\n"
                        "  ^bb0(%each_{1}: !transform.any_op):\n"
                        "  %{1} = transform.cast %each_{1} : !transform.any_op "
                        "to !transform.op<\"scf.for\">\n"
                        "  transform.sequence %{1} : "
                        "!transform.op<\"scf.for\"> failures(suppress) {{\n"
                        "  ^bb0(%l_{1}: !transform.op<\"scf.for\">):\n"
                        "    %main_{1}, %rest_{1} = transform.loop.peel %l_{1} "
                        ": (!transform.op<\"scf.for\">) -> "
                        "(!transform.any_op, !transform.any_op)\n{2}"
                        "  }\n"
                        "  }\n",
                        handle, name, rest);
  };
  for (auto &[key, t] : configs) {
    os << llvm::formatv(
        "  %mm_{0} = transform.structured.match ops{{[\"linalg.matmul\"]} "
        "attributes{{{1} = \"{0}\"} in %root : (!transform.any_op) -> "
        "!transform.any_op\n"
        "  %k_{0}, %kl_{0} = transform.structured.tile_using_for %mm_{0} "
        "tile_sizes "
        "[0, 0, {2}] : (!transform.any_op) -> (!transform.any_op, "
        "!transform.any_op)\n"
        "  %r_{0}, %rl_{0}:2 = transform.structured.tile_using_for %k_{0} "
        "tile_sizes "
        "[{3}, {4}, 0] : (!transform.any_op) -> (!transform.any_op, "
        "!transform.any_op, "
        "!transform.any_op)\n",
        key, kScheduleAttr, t.kt, t.mr, t.nr);
    // A trip count that divides evenly makes loop.peel fail silenceably:
    // nothing to peel.
    std::string columns;
    if (t.nr > lanes)
      columns = llvm::formatv(
          "    transform.foreach %rest_j_{0} : !transform.any_op {{\n"
          "    ^bb3(%restloop_j_{0}: !transform.any_op):\n"
          "    %rm_j_{0} = transform.structured.match "
          "ops{{[\"linalg.matmul\"]} in %restloop_j_{0} "
          ": (!transform.any_op) -> !transform.any_op\n"
          "    transform.foreach %rm_j_{0} : !transform.any_op {{\n"
          "    ^bb1(%vop_{0}: !transform.any_op):\n"
          "    %v_{0}, %vl_{0} = transform.structured.tile_using_for %vop_{0} "
          "tile_sizes "
          "[0, {1}, 0] : (!transform.any_op) -> (!transform.any_op, "
          "!transform.any_op)\n"
          "    %vc_{0} = transform.cast %vl_{0} : !transform.any_op to "
          "!transform.op<\"scf.for\">\n"
          "    transform.sequence %vc_{0} : !transform.op<\"scf.for\"> "
          "failures(suppress) {{\n"
          "    ^bb2(%vloop_{0}: !transform.op<\"scf.for\">):\n"
          "      %vm_{0}, %vr_{0} = transform.loop.peel %vloop_{0} : "
          "(!transform.op<\"scf.for\">) "
          "-> (!transform.any_op, !transform.any_op)\n"
          "      %vmm_{0} = transform.structured.match "
          "ops{{[\"linalg.matmul\"]} in %vm_{0} "
          ": (!transform.any_op) -> !transform.any_op\n"
          "      transform.annotate %vmm_{0} \"{2}\" : !transform.any_op\n"
          "    }\n"
          "    }\n"
          "    }\n",
          key, lanes, kFullVectorAttr);
    peel(("%rl_" + key + "#1"), "j_" + key, columns);
    std::string rows;
    if (t.mr > 1)
      rows = llvm::formatv(
          "    transform.foreach %rest_i_{0} : !transform.any_op {{\n"
          "    ^bb3(%restloop_i_{0}: !transform.any_op):\n"
          "    %rm_i_{0} = transform.structured.match "
          "ops{{[\"linalg.matmul\"]} in %restloop_i_{0} "
          ": (!transform.any_op) -> !transform.any_op\n"
          "    transform.foreach %rm_i_{0} : !transform.any_op {{\n"
          "    ^bb1(%rop_{0}: !transform.any_op):\n"
          "    %one_{0}, %onel_{0} = transform.structured.tile_using_for "
          "%rop_{0} tile_sizes "
          "[1, 0, 0] : (!transform.any_op) -> (!transform.any_op, "
          "!transform.any_op)\n"
          "    }\n"
          "    }\n",
          key);
    peel(("%rl_" + key + "#0"), "i_" + key, rows);
  }
  for (auto &[key, t] : configs)
    os << llvm::formatv(
        "  %all_{0} = transform.structured.match ops{{[\"linalg.matmul\"]} "
        "attributes{{{1} = \"{0}\"} in %root : (!transform.any_op) -> "
        "!transform.any_op\n"
        "  transform.foreach %all_{0} : !transform.any_op {{\n"
        "  ^bb0(%uop_{0}: !transform.any_op):\n"
        "  %u_{0}, %ul_{0} = transform.structured.tile_using_for %uop_{0} "
        "tile_sizes [0, 0, 1] "
        ": (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n"
        "  }\n",
        key, kScheduleAttr);
  // Folds the tiles' affine.min where the loop bounds decide them (static
  // shapes for the full tiles, also where a peel had nothing to do).
  os << "  %f0 = transform.structured.match ops{[\"func.func\"]} in %root : "
        "(!transform.any_op) -> !transform.any_op\n"
        "  transform.apply_patterns to %f0 {\n"
        "    transform.apply_patterns.canonicalization\n"
        "    transform.apply_patterns.scf.for_loop_canonicalization\n"
        "  } : !transform.any_op\n";
  os << kFooter;
  return s;
}

/// Phase 4, after vectorisation: canonical transfers and loop-invariant
/// code out of the tile loops; then (hoistAccumulators) the accumulators
/// out of the K loop.
std::string cleanupSchedule() {
  std::string s = kHeader;
  s += R"mlir(
  %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
  transform.foreach %funcs : !transform.any_op {
  ^bb0(%f: !transform.any_op):
    transform.apply_patterns to %f { transform.apply_patterns.vector.lower_masked_transfers } : !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.memref.fold_memref_alias_ops
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %f : !transform.any_op
    %loops = transform.structured.match ops{["scf.for"]} in %f : (!transform.any_op) -> !transform.any_op
    transform.apply_licm to %loops : !transform.any_op
  }
)mlir";
  s += kFooter;
  return s;
}

/// The accumulators of each matmul's tile loops read once before its K loop
/// and written once after it. Per loop nest (an output tile's scf.forall, or
/// the outermost loop of a nest without one: a small matmul, a chunk loop's
/// tiles), not per function: upstream's hoisting restarts its walk of the
/// whole root after every hoist, which over a step's function was quadratic
/// in its matmuls.
void hoistAccumulators(ModuleOp module) {
  SmallVector<Operation *> nests;
  module.walk<WalkOrder::PreOrder>([&](Operation *op) {
    bool nest = llvm::isa<scf::ForallOp>(op);
    if (auto loop = llvm::dyn_cast<scf::ForOp>(op))
      nest = !loop->walk([](scf::ForallOp) { return WalkResult::interrupt(); })
                  .wasInterrupted();
    if (!nest)
      return WalkResult::advance();
    nests.push_back(op);
    return WalkResult::skip();
  });
  for (Operation *nest : nests)
    linalg::hoistRedundantVectorTransfers(nest);
}

/// What upstream's hoisting leaves: a register tile's accumulators read and
/// written on every iteration of its K loop when their buffer also has
/// views (the output tile that a fill or an epilogue writes inside the
/// product's tiles), which upstream refuses. A read and a write of the same
/// vector at the same loop-invariant place of a buffer made by this step
/// (an alloc: no other buffer aliases it), which nothing else in the loop
/// touches, become a value carried by the loop: read before it, written
/// after it.
void hoistTileAccumulators(ModuleOp module) {
  SmallVector<scf::ForOp> loops;
  module.walk([&](scf::ForOp loop) { loops.push_back(loop); }); // inner first
  IRRewriter rewriter(module.getContext());
  for (scf::ForOp loop : loops) {
    bool hoisted = true;
    while (hoisted) {
      hoisted = false;
      for (auto write : loop.getBody()->getOps<vector::TransferWriteOp>()) {
        Value base = write.getBase();
        Value root = tgc::rootBuffer(base);
        if (write.getMask() || !isa<MemRefType>(base.getType()) ||
            !root.getDefiningOp<memref::AllocOp>() ||
            !loop.isDefinedOutsideOfLoop(base) ||
            !llvm::all_of(write.getIndices(), [&](Value index) {
              return loop.isDefinedOutsideOfLoop(index);
            }))
          continue;
        vector::TransferReadOp read;
        for (auto candidate : loop.getBody()->getOps<vector::TransferReadOp>())
          if (candidate.getBase() == base && !candidate.getMask() &&
              candidate.getIndices() == write.getIndices() &&
              candidate.getVectorType() == write.getVectorType() &&
              candidate.getPermutationMap() == write.getPermutationMap() &&
              candidate.getInBoundsAttr() == write.getInBoundsAttr() &&
              candidate->isBeforeInBlock(write))
            read = candidate;
        if (!read)
          continue;
        bool alone = true;
        loop.getBody()->walk([&](Operation *op) {
          if (op == read || op == write)
            return;
          for (Value operand : op->getOperands())
            if (tgc::rootBuffer(operand) == root)
              alone = false;
        });
        if (!alone)
          continue;
        rewriter.moveOpBefore(read, loop);
        FailureOr<LoopLikeOpInterface> carried =
            loop.replaceWithAdditionalYields(
                rewriter, read.getResult(),
                /*replaceInitOperandUsesInLoop=*/true,
                [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
                  return SmallVector<Value>{write.getValueToStore()};
                });
        if (failed(carried))
          continue;
        loop = llvm::cast<scf::ForOp>(carried->getOperation());
        rewriter.moveOpAfter(write, loop);
        rewriter.modifyOpInPlace(write, [&] {
          write.getValueToStoreMutable().assign(loop.getResults().back());
        });
        hoisted = true;
        break;
      }
    }
  }
}

/// Phase 5: the contractions as FMAs. Each greedy set apart: lower_masks or
/// the vector lowerings in one set with canonicalisation ping-pong on
/// constant masks and 1-row tiles (memory without bound).
std::string loweringSchedule() {
  std::string s = kHeader;
  s += R"mlir(
  %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
  transform.foreach %funcs : !transform.any_op {
  ^bb0(%f2: !transform.any_op):
    transform.apply_patterns to %f2 {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_broadcast
      transform.apply_patterns.vector.lower_shape_cast
    } : !transform.any_op
    transform.apply_patterns to %f2 { transform.apply_patterns.canonicalization } : !transform.any_op
    transform.apply_patterns to %f2 { transform.apply_patterns.vector.lower_masks } : !transform.any_op
  }
)mlir";
  s += kFooter;
  return s;
}

/// Phase 3: vectorises every scheduled matmul tile. Static tiles vectorise
/// as they are; a dynamic size (a partial vector of columns, or rows where
/// nothing was peeled) is masked up to its bound: one vector of `lanes`,
/// or MR rows.
LogicalResult vectorizeTiles(ModuleOp module,
                             const std::map<std::string, MatmulTiles> &configs,
                             int64_t lanes) {
  SmallVector<linalg::MatmulOp> tiles;
  module.walk([&](linalg::MatmulOp op) {
    if (op->hasAttr(kScheduleAttr))
      tiles.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::MatmulOp op : tiles) {
    const MatmulTiles &t =
        configs.at(op->getAttrOfType<StringAttr>(kScheduleAttr).str());
    SmallVector<int64_t> ranges =
        llvm::cast<linalg::LinalgOp>(op.getOperation()).getStaticLoopRanges();
    SmallVector<int64_t> sizes;
    bool dynamic = false, onlyColumnsDynamic = true;
    for (auto [d, r] : llvm::enumerate(ranges)) {
      bool dyn = ShapedType::isDynamic(r);
      dynamic |= dyn;
      onlyColumnsDynamic &= !dyn || d == 1;
      sizes.push_back(!dyn     ? r
                      : d == 0 ? t.mr
                      : d == 1 ? std::min(t.nr, lanes)
                               : 1);
    }
    bool fullColumns =
        dynamic && onlyColumnsDynamic && op->hasAttr(kFullVectorAttr);
    rewriter.setInsertionPoint(op);
    // Scalable flags given explicitly: an empty list builds mask types that
    // print alike but differ from the transfers' (verifier failure).
    SmallVector<bool> scalable(sizes.size(), false);
    if (!dynamic)
      sizes.clear(), scalable.clear();
    if (failed(linalg::vectorize(
            rewriter, op, sizes, scalable, /*vectorizeNDExtract=*/false,
            /*flatten1DDepthwiseConv=*/false,
            /*assumeDynamicDimsMatchVecSizes=*/fullColumns)))
      return op.emitError(
          "tgc-vectorize-matmuls: internal error: a tile did not vectorise");
    rewriter.eraseOp(op);
  }
  return success();
}

/// Whether `op` is a product on buffers with an f32 output (its narrow
/// inputs are widened by widenNarrowOperands).
bool isWidenedProduct(Operation *op) {
  auto product = llvm::dyn_cast<linalg::LinalgOp>(op);
  return llvm::isa_and_nonnull<linalg::MatmulOp, linalg::BatchMatmulOp>(op) &&
         product.hasPureBufferSemantics() &&
         getElementTypeOrSelf(product.getDpsInits()[0].getType()).isF32();
}

/// A narrow (bf16/f16) buffer that one elementwise loop writes whole by
/// rounding f32 values (its yield an `arith.truncf`), and that only
/// products read (directly or through reshapes), would be rounded, stored,
/// read back and widened to f32 for them. Instead the loop stores the
/// rounded values widened back (`extf(truncf(x))`, the same numbers the
/// products would see) into an f32 buffer that the products read: one pass
/// instead of two, and no narrow buffer. For targets that widen (no AMX,
/// no AVX512-BF16): the copies of the weights, of the gradients entering
/// the backward products and of the products' activations, where the
/// products follow the cast (see kMaxOpsToReaders).
void roundInsteadOfNarrowing(
    ModuleOp module, llvm::function_ref<bool(Operation *)> keepsNarrow) {
  SmallVector<memref::AllocOp> narrow;
  module.walk([&](memref::AllocOp alloc) {
    MemRefType type = alloc.getType();
    if (type.hasStaticShape() && type.getLayout().isIdentity() &&
        llvm::isa<BFloat16Type, Float16Type>(type.getElementType()))
      narrow.push_back(alloc);
  });
  IRRewriter rewriter(module.getContext());
  for (memref::AllocOp alloc : narrow) {
    Value buffer = alloc.getResult();
    linalg::GenericOp writer;
    SmallVector<Operation *> reshapes;
    bool onlyProducts = true;
    // A product reading `v` (not writing it).
    auto readsAsProduct = [&](Operation *user, Value v) {
      return isWidenedProduct(user) && !keepsNarrow(user) &&
             !llvm::is_contained(
                 llvm::cast<linalg::LinalgOp>(user).getDpsInits(), v);
    };
    auto readByProducts = [&](Value v) {
      return llvm::all_of(v.getUsers(), [&](Operation *user) {
        return readsAsProduct(user, v);
      });
    };
    for (Operation *user : buffer.getUsers()) {
      auto generic = llvm::dyn_cast<linalg::GenericOp>(user);
      if (generic && llvm::is_contained(generic.getDpsInits(), buffer) &&
          !llvm::is_contained(generic.getDpsInputs(), buffer) && !writer) {
        writer = generic;
        continue;
      }
      if (llvm::isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(user) &&
          readByProducts(user->getResult(0))) {
        reshapes.push_back(user);
        continue;
      }
      if (!readsAsProduct(user, buffer))
        onlyProducts = false;
    }
    if (!writer || !onlyProducts || writer.getNumLoops() == 0 ||
        writer.getNumReductionLoops() != 0)
      continue;
    // The writer covers the buffer (an identity map), does not read what
    // it writes, and rounds an f32 value into it.
    OpOperand *init = nullptr;
    for (OpOperand &operand : writer.getDpsInitsMutable())
      if (operand.get() == buffer)
        init = &operand;
    if (!writer.getMatchingIndexingMap(init).isIdentity() ||
        !writer.getMatchingBlockArgument(init).use_empty())
      continue;
    auto yield = llvm::cast<linalg::YieldOp>(writer.getBody()->getTerminator());
    unsigned result = init->getOperandNumber() - writer.getNumDpsInputs();
    auto round = yield.getOperand(result).getDefiningOp<arith::TruncFOp>();
    if (!round || !round.getIn().getType().isF32())
      continue;
    // Every reader comes soon after the writer, in its block: an f32
    // buffer kept longer (a bf16 copy the backward pass saves for a weight
    // gradient) would cost twice the memory of the narrow one for all that
    // time, where a widened copy lives only around its product.
    constexpr int kMaxOpsToReaders = 64;
    llvm::SmallPtrSet<Operation *, 8> readers;
    for (Operation *user : buffer.getUsers()) {
      if (user == writer)
        continue;
      if (llvm::is_contained(reshapes, user))
        readers.insert(user->getUsers().begin(), user->getUsers().end());
      readers.insert(user);
    }
    int seen = 0;
    for (Operation *op = writer->getNextNode();
         op && !readers.empty() && seen < kMaxOpsToReaders;
         op = op->getNextNode(), ++seen)
      readers.erase(op);
    if (!readers.empty())
      continue;
    Type f32 = rewriter.getF32Type();
    rewriter.setInsertionPoint(alloc);
    auto wide = memref::AllocOp::create(
        rewriter, alloc.getLoc(),
        MemRefType::get(alloc.getType().getShape(), f32));
    rewriter.setInsertionPoint(yield);
    Value widened =
        arith::ExtFOp::create(rewriter, round.getLoc(), f32, round.getResult());
    rewriter.modifyOpInPlace(writer, [&] {
      yield->setOperand(result, widened);
      writer.getMatchingBlockArgument(init).setType(f32);
      init->set(wide);
    });
    for (Operation *reshape : reshapes) {
      rewriter.setInsertionPoint(reshape);
      Value view;
      if (auto collapse = llvm::dyn_cast<memref::CollapseShapeOp>(reshape))
        view =
            memref::CollapseShapeOp::create(rewriter, collapse.getLoc(), wide,
                                            collapse.getReassociationIndices());
      else {
        auto expand = llvm::cast<memref::ExpandShapeOp>(reshape);
        view = memref::ExpandShapeOp::create(
            rewriter, expand.getLoc(), expand.getResultType().getShape(), wide,
            expand.getReassociationIndices());
      }
      rewriter.replaceOp(reshape, view);
    }
    rewriter.replaceAllUsesWith(alloc.getResult(), wide.getResult());
    rewriter.eraseOp(alloc);
  }
}

/// Whether `use` of a view only reads it: a linalg input, a load, a copy's
/// source.
bool onlyReads(OpOperand &use) {
  Operation *user = use.getOwner();
  if (auto linalgOp = llvm::dyn_cast<linalg::LinalgOp>(user))
    return linalgOp.isDpsInput(&use);
  if (auto copy = llvm::dyn_cast<memref::CopyOp>(user))
    return use.get() == copy.getSource();
  return llvm::isa<memref::LoadOp, vector::TransferReadOp, vector::LoadOp>(
      user);
}

/// Remakes the chain of views from `root` to `view` (reshapes and
/// subviews) on `newRoot`, whose element type may differ: each new view
/// right after its original, or all at the rewriter's insertion point with
/// `inPlace` false. Null when the chain holds anything else.
Value remakeViewChain(RewriterBase &rewriter, Value root, Value view,
                      Value newRoot, bool inPlace) {
  if (view == root)
    return newRoot;
  Operation *op = view.getDefiningOp();
  if (!llvm::isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp,
                             memref::SubViewOp>(op))
    return {};
  Value source =
      remakeViewChain(rewriter, root, op->getOperand(0), newRoot, inPlace);
  if (!source)
    return {};
  OpBuilder::InsertionGuard guard(rewriter);
  if (inPlace)
    rewriter.setInsertionPointAfter(op);
  Location loc = op->getLoc();
  Value remade;
  if (auto expand = llvm::dyn_cast<memref::ExpandShapeOp>(op)) {
    remade = memref::ExpandShapeOp::create(
        rewriter, loc, expand.getResultType().getShape(), source,
        expand.getReassociationIndices(), expand.getMixedOutputShape());
  } else if (auto collapse = llvm::dyn_cast<memref::CollapseShapeOp>(op)) {
    remade = memref::CollapseShapeOp::create(
        rewriter, loc, source, collapse.getReassociationIndices());
  } else {
    auto subview = llvm::cast<memref::SubViewOp>(op);
    auto type = memref::SubViewOp::inferRankReducedResultType(
        subview.getType().getShape(), llvm::cast<MemRefType>(source.getType()),
        subview.getMixedOffsets(), subview.getMixedSizes(),
        subview.getMixedStrides());
    remade = memref::SubViewOp::create(
        rewriter, loc, llvm::cast<MemRefType>(type), source,
        subview.getMixedOffsets(), subview.getMixedSizes(),
        subview.getMixedStrides());
  }
  if (!inPlace)
    rewriter.setInsertionPointAfter(remade.getDefiningOp());
  return remade;
}

/// Whether `view` is `root` reshaped (no subviews, no operands but the
/// source): such a chain can be remade anywhere after the root.
bool isReshapeOf(Value view, Value root) {
  while (view != root) {
    Operation *op = view.getDefiningOp();
    if (!llvm::isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(
            op) ||
        op->getNumOperands() != 1)
      return false;
    view = op->getOperand(0);
  }
  return true;
}

/// How a loop casts an f32 buffer X for products into a buffer Y of X's
/// shape: by rounding to bf16/f16 precision in f32 (`extf(truncf(x))`,
/// targets that widen: roundInsteadOfNarrowing makes them), or by narrowing
/// (`truncf(x)`, targets with bf16 products). Null if `op` is no such loop.
Type castForProducts(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 0 ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return {};
  auto in = llvm::dyn_cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto out = llvm::dyn_cast<MemRefType>(op.getDpsInits()[0].getType());
  if (!in || !out || in.getShape() != out.getShape() ||
      !in.getElementType().isF32())
    return {};
  Block *body = op.getBody();
  auto yield = llvm::cast<linalg::YieldOp>(body->getTerminator());
  Value result = yield.getOperand(0);
  if (out.getElementType().isF32()) {
    auto widen = result.getDefiningOp<arith::ExtFOp>();
    if (!widen || body->getOperations().size() != 3)
      return {};
    result = widen.getIn();
  } else if (body->getOperations().size() != 2) {
    return {};
  }
  auto round = result.getDefiningOp<arith::TruncFOp>();
  if (!round || round.getIn() != body->getArgument(0) ||
      !llvm::isa<BFloat16Type, Float16Type>(round.getType()))
    return {};
  return round.getType();
}

/// A loop that casts an f32 buffer X for the products (castForProducts)
/// is one more pass over memory, and one more parallel region, than the
/// f32 step has: at two threads such passes cost the bf16 step much of
/// what its products save. Where one elementwise loop (or one copy, in
/// parallel tasks perhaps) writes X and the rest of the step only reads
/// it, that loop casts what it stores instead:
/// into a buffer of X's shape that the products read, replacing X where
/// the cast was X's only reader, beside it otherwise; a rounding cast into
/// X itself where nothing else reads X. The same numbers, without the pass
/// (and without X's f32 buffer where the products alone read it). A
/// writer that is a product's epilogue (`epilogues`) is replaced there.
void castInProducers(ModuleOp module,
                     MutableArrayRef<linalg::GenericOp> epilogues) {
  SmallVector<linalg::GenericOp> casts;
  module.walk([&](linalg::GenericOp op) {
    if (castForProducts(op))
      casts.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::GenericOp cast : casts) {
    Type narrowType = castForProducts(cast);
    Value input = cast.getDpsInputs()[0];
    auto output = cast.getDpsInits()[0].getDefiningOp<memref::AllocOp>();
    Value root = tgc::rootBuffer(input);
    auto source = root.getDefiningOp<memref::AllocOp>();
    if (!output || !source)
      continue;
    // Every access to X, through its views: one writer, the cast and
    // perhaps other readers. The writer may be a copy (attention's tasks
    // copy each head's dV into its columns of X): it becomes the loop it
    // stands for, which then casts as it copies.
    linalg::GenericOp writer;
    linalg::CopyOp copyWriter;
    OpOperand *written = nullptr;
    bool otherReaders = false, otherAccess = false;
    SmallVector<Value> views{root};
    while (!views.empty() && !otherAccess) {
      Value view = views.pop_back_val();
      for (OpOperand &use : view.getUses()) {
        Operation *user = use.getOwner();
        if (user == cast || llvm::isa<memref::DeallocOp>(user))
          continue;
        if (llvm::isa<memref::ExpandShapeOp, memref::CollapseShapeOp,
                      memref::SubViewOp>(user)) {
          views.push_back(user->getResult(0));
          continue;
        }
        if (onlyReads(use)) {
          otherReaders = true;
          continue;
        }
        auto copy = llvm::dyn_cast<linalg::CopyOp>(user);
        if (copy && !writer && !copyWriter && copy.isDpsInit(&use) &&
            copy.hasPureBufferSemantics() &&
            getElementTypeOrSelf(copy.getInputs()[0].getType()).isF32()) {
          copyWriter = copy;
          continue;
        }
        auto generic = llvm::dyn_cast<linalg::GenericOp>(user);
        if (!generic || writer || copyWriter || !generic.isDpsInit(&use) ||
            !generic.getMatchingBlockArgument(&use).use_empty()) {
          otherAccess = true;
          break;
        }
        writer = generic;
        written = &use;
      }
    }
    if (otherAccess || (!writer && !copyWriter))
      continue;
    // The writer runs first.
    Operation *writerAt = cast->getBlock()->findAncestorOpInBlock(
        writer ? *writer.getOperation() : *copyWriter.getOperation());
    if (!writerAt || !writerAt->isBeforeInBlock(cast))
      continue;
    if (copyWriter) {
      rewriter.setInsertionPoint(copyWriter);
      FailureOr<linalg::GenericOp> loop =
          linalg::generalizeNamedOp(rewriter, copyWriter);
      if (failed(loop))
        continue;
      writer = *loop;
      written = writer.getDpsInitOperand(0);
    }
    auto yield = llvm::cast<linalg::YieldOp>(writer.getBody()->getTerminator());
    unsigned result = written->getOperandNumber() - writer.getNumDpsInputs();
    Value value = yield.getOperand(result);
    if (!value.getType().isF32())
      continue;
    Type castType = getElementTypeOrSelf(output.getType());
    auto castValue = [&](OpBuilder &b, Location loc, Value v) -> Value {
      Value narrow = arith::TruncFOp::create(b, loc, narrowType, v);
      if (castType == narrow.getType())
        return narrow;
      return arith::ExtFOp::create(b, loc, castType, narrow);
    };
    auto eraseCast = [&](Value replacement) {
      rewriter.eraseOp(cast);
      for (Operation *user : llvm::make_early_inc_range(output->getUsers()))
        if (llvm::isa<memref::DeallocOp>(user))
          rewriter.eraseOp(user);
      rewriter.replaceAllUsesWith(output.getResult(), replacement);
      rewriter.eraseOp(output);
    };

    if (!otherReaders && castType.isF32()) {
      // Y's readers read X in its place, so X must be there before them.
      DominanceInfo dominance(cast->getParentOp());
      if (llvm::any_of(output->getUses(), [&](OpOperand &use) {
            return use.getOwner() != cast &&
                   !llvm::isa<memref::DeallocOp>(use.getOwner()) &&
                   !dominance.properlyDominates(input, use.getOwner());
          }))
        continue;
      rewriter.setInsertionPoint(yield);
      Value rounded = castValue(rewriter, yield.getLoc(), value);
      rewriter.modifyOpInPlace(yield,
                               [&] { yield->setOperand(result, rounded); });
      eraseCast(input);
      continue;
    }

    // The writer stores the cast values into a buffer of X's shape, next
    // to X; the cast's view of X and the writer's are remade on it.
    // Y's readers then read a reshape of that buffer: of Y's type when X
    // and Y are plain buffers.
    auto plain = [](MemRefType type) {
      return type.getLayout().isIdentity() && !type.getMemorySpace();
    };
    if (!isReshapeOf(input, root) || !plain(source.getType()) ||
        output.getType() !=
            MemRefType::get(llvm::cast<MemRefType>(input.getType()).getShape(),
                            castType))
      continue;
    MemRefType castBufferType =
        MemRefType::get(source.getType().getShape(), castType);
    rewriter.setInsertionPointAfter(source);
    auto castBuffer = memref::AllocOp::create(
        rewriter, output.getLoc(), castBufferType, output.getAlignmentAttr());
    rewriter.setInsertionPointAfter(castBuffer);
    Value readView =
        remakeViewChain(rewriter, root, input, castBuffer, /*inPlace=*/false);
    Value writeView = remakeViewChain(rewriter, root, written->get(),
                                      castBuffer, /*inPlace=*/true);
    assert(readView && writeView && "the walk above followed only views");
    rewriter.setInsertionPoint(yield);
    Value castResult = castValue(rewriter, yield.getLoc(), value);
    if (!otherReaders) {
      // Only the cast read X: the writer stores into the new buffer alone.
      rewriter.modifyOpInPlace(writer, [&] {
        yield->setOperand(result, castResult);
        writer.getMatchingBlockArgument(written).setType(castType);
        written->set(writeView);
      });
      eraseCast(readView);
      continue;
    }
    SmallVector<Value> outputs = writer.getDpsInits();
    outputs.push_back(writeView);
    SmallVector<AffineMap> maps = writer.getIndexingMapsArray();
    maps.push_back(writer.getMatchingIndexingMap(written));
    rewriter.setInsertionPoint(writer);
    auto fused = linalg::GenericOp::create(
        rewriter, writer.getLoc(), TypeRange{}, writer.getDpsInputs(), outputs,
        maps, writer.getIteratorTypesArray());
    fused->setDiscardableAttrs(writer->getDiscardableAttrDictionary());
    rewriter.inlineRegionBefore(writer.getRegion(), fused.getRegion(),
                                fused.getRegion().end());
    fused.getBody()->addArgument(castType, writer.getLoc());
    rewriter.modifyOpInPlace(yield, [&] {
      yield->insertOperands(yield->getNumOperands(), castResult);
    });
    // A writer that is a product's epilogue stays one, with its new output.
    for (linalg::GenericOp &epilogue : epilogues)
      if (epilogue == writer)
        epilogue = fused;
    rewriter.eraseOp(writer);
    eraseCast(readView);
  }
}

/// Products of bf16/f16 operands with an f32 accumulator: each narrow
/// operand is widened into an f32 buffer once (planned in the arena like
/// any temporary), and the product runs as an f32 one. Widening inside the
/// register tiles instead converts every element of A once per column tile
/// and of B once per row tile, and the extra registers spill accumulators
/// (the tiny llama step ran 1.56x slower than in f32 that way). The copy
/// costs O(MK + KN) against the product's O(MNK). Later products of the
/// same block that read the same narrow buffer (the Q, K and V projections
/// of one input, the weight gradients that share it) reuse the copy while
/// nothing between them may write that buffer.
void widenNarrowOperands(ModuleOp module,
                         llvm::function_ref<bool(Operation *)> keepsNarrow) {
  SmallVector<linalg::LinalgOp> products;
  module.walk([&](linalg::LinalgOp op) {
    if (!isWidenedProduct(op) || keepsNarrow(op))
      return;
    // The arena planner places the widened buffers of a function body and
    // of its top-level loops; the deallocation pipeline frees the others.
    if (llvm::any_of(op.getDpsInputs(), [](Value in) {
          auto type = llvm::dyn_cast<MemRefType>(in.getType());
          return type && type.hasStaticShape() &&
                 llvm::isa<BFloat16Type, Float16Type>(type.getElementType());
        }))
      products.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  struct Widened {
    Value wide;
    Operation *widening; // the copy; its buffer is valid from here on
  };
  DenseMap<Value, Widened> widened;
  auto reusable = [&](Value narrow, Operation *product) -> Value {
    auto it = widened.find(narrow);
    if (it == widened.end() ||
        it->second.widening->getBlock() != product->getBlock() ||
        !it->second.widening->isBeforeInBlock(product))
      return {};
    Value root = tgc::rootBuffer(narrow);
    for (Operation *op = it->second.widening->getNextNode(); op != product;
         op = op->getNextNode())
      if (tgc::mayWriteBuffer(op, root))
        return {};
    return it->second.wide;
  };
  for (linalg::LinalgOp op : products) {
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    Type f32 = rewriter.getF32Type();
    for (OpOperand *operand : op.getDpsInputOperands()) {
      auto type = llvm::cast<MemRefType>(operand->get().getType());
      if (type.getElementType() == f32)
        continue;
      if (Value wide = reusable(operand->get(), op)) {
        operand->set(wide);
        continue;
      }
      auto wide = memref::AllocOp::create(
          rewriter, loc, MemRefType::get(type.getShape(), f32));
      int64_t rank = type.getRank();
      AffineMap id = rewriter.getMultiDimIdentityMap(rank);
      auto copy = linalg::GenericOp::create(
          rewriter, loc, ValueRange{operand->get()}, ValueRange{wide},
          ArrayRef<AffineMap>{id, id},
          SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value x = arith::ExtFOp::create(b, l, f32, args[0]);
            linalg::YieldOp::create(b, l, x);
          });
      widened[operand->get()] = {wide, copy};
      operand->set(wide);
    }
  }
}

/// The casts around the products that read narrow operands as f32
/// (`keepsNarrow`: those that read them as they are, on AMX tiles or
/// vdpbf16ps): rounded values stored as f32 where only such products read
/// them, casts done by the loops that write their inputs, and the narrow
/// operands left widened into f32 copies.
void prepareProductOperands(ModuleOp module,
                            MutableArrayRef<linalg::GenericOp> epilogues,
                            llvm::function_ref<bool(Operation *)> keepsNarrow) {
  roundInsteadOfNarrowing(module, keepsNarrow);
  castInProducers(module, epilogues);
  widenNarrowOperands(module, keepsNarrow);
}

constexpr llvm::StringLiteral kTileInitAttr = "tgc.fill_tiles_with";

bool isScheduledBatchLayout(linalg::LinalgOp op);

/// Products the schedule tiles: matmuls, and batch matmuls of the default
/// or transposed-left-operand layout, on static buffers (others are left to
/// the loops).
bool isScheduledProduct(linalg::LinalgOp op) {
  bool batched = llvm::isa<linalg::BatchMatmulOp>(op);
  if (!batched && !llvm::isa<linalg::MatmulOp>(op))
    return false;
  if (batched && !isScheduledBatchLayout(op))
    return false;
  // An empty operand (a zero size) leaves nothing to tile: the loops do it.
  return op.hasPureBufferSemantics() &&
         llvm::all_of(op->getOperandTypes(), [](Type t) {
           auto m = llvm::dyn_cast<MemRefType>(t);
           return m && m.hasStaticShape() && m.getNumElements() > 0;
         });
}

/// Whether all of `op`'s operands are f32 (bf16/f16 operands are widened,
/// or become AMX tiles or vdpbf16ps products, before the f32 schedule).
bool isF32Product(linalg::LinalgOp op) {
  return llvm::all_of(op->getOperandTypes(),
                      [](Type t) { return getElementTypeOrSelf(t).isF32(); });
}

/// The ops of type OpTy in `module` that carry the attribute `name`, in
/// order (collected first: the callers rewrite them).
template <typename OpTy>
SmallVector<OpTy> opsWithAttr(ModuleOp module, StringRef name) {
  SmallVector<OpTy> ops;
  module.walk([&](OpTy op) {
    if (op->hasAttr(name))
      ops.push_back(op);
  });
  return ops;
}

/// Moves each product's accumulator fill (findAccumulatorInit) onto the
/// product as an attribute holding the fill's constant; after the output
/// tiles exist, fillOutputTiles puts a fill of each tile right before the
/// tile's product, where the tile's K loop then finds it in cache.
void takeAccumulatorFills(ModuleOp module, bool amx, bool bf16Dot) {
  SmallVector<std::pair<linalg::LinalgOp, linalg::FillOp>> moves;
  module.walk([&](linalg::LinalgOp op) {
    if (!tgc::cpu::fusesIntoProductTiles(op, amx))
      return;
    // A vdpbf16ps product's emitter starts its registers from the fill.
    if (tgc::cpu::isEmittedProduct(op, amx, bf16Dot))
      return;
    if (linalg::FillOp fill = tgc::findAccumulatorInit(op))
      moves.emplace_back(op, fill);
  });
  for (auto [op, fill] : moves) {
    // findAccumulatorInit takes fills of a constant only.
    Attribute value;
    matchPattern(fill.getInputs()[0], m_Constant(&value));
    op->setAttr(kTileInitAttr, value);
    fill->erase();
  }
}

void fillOutputTiles(ModuleOp module) {
  OpBuilder b(module.getContext());
  for (linalg::LinalgOp op :
       opsWithAttr<linalg::LinalgOp>(module, kTileInitAttr)) {
    auto value = llvm::cast<TypedAttr>(op->getAttr(kTileInitAttr));
    op->removeAttr(kTileInitAttr);
    b.setInsertionPoint(op);
    Value constant = arith::ConstantOp::create(b, op.getLoc(), value);
    linalg::FillOp::create(b, op.getLoc(), ValueRange{constant},
                           ValueRange{op.getDpsInits()[0]});
  }
}

using tgc::cpu::kEpilogueAttr;

/// Moves `v`'s buffer (and reshapes of it) made between `product` and
/// its reader before the product, sources first.
void hoistBefore(Value v, Operation *product) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != product->getBlock() ||
      def->isBeforeInBlock(product))
    return;
  for (Value operand : def->getOperands())
    hoistBefore(operand, product);
  def->moveBefore(product);
}

/// Each product's epilogue (findEpilogue), its buffers made before the
/// product; the product carries the epilogue's index (its tiles keep it).
SmallVector<linalg::GenericOp> takeEpilogues(ModuleOp module, bool amx) {
  SmallVector<std::pair<linalg::LinalgOp, linalg::GenericOp>> found;
  module.walk([&](linalg::LinalgOp op) {
    if (tgc::cpu::fusesIntoProductTiles(op, amx))
      if (linalg::GenericOp epilogue = tgc::findEpilogue(op))
        found.emplace_back(op, epilogue);
  });
  SmallVector<linalg::GenericOp> epilogues;
  Builder b(module.getContext());
  for (auto [product, epilogue] : found) {
    // Its buffers made between the two move before the product.
    Value acc = product.getDpsInits()[0];
    for (Value v : epilogue->getOperands())
      if (tgc::rootBuffer(v) != acc)
        hoistBefore(v, product);
    product->setAttr(kEpilogueAttr, b.getI64IntegerAttr(epilogues.size()));
    epilogues.push_back(epilogue);
  }
  return epilogues;
}

/// `v` (M x N elements in a product's output order) as an [M, N] view.
Value asMatrix(OpBuilder &b, Location loc, Value v, int64_t n) {
  auto type = llvm::cast<MemRefType>(v.getType());
  if (type.getRank() == 2 && type.getDimSize(1) == n)
    return v;
  if (auto expand = v.getDefiningOp<memref::ExpandShapeOp>())
    if (expand.getSrcType().getRank() == 2 &&
        expand.getSrcType().getDimSize(1) == n)
      return expand.getSrc();
  int64_t columns = tgc::columnDims(type, n);
  assert(columns >= 1 && "findEpilogue took row-major-like operands only");
  ReassociationIndices rows, cols;
  for (int64_t d = 0; d < type.getRank(); ++d)
    (d < columns ? rows : cols).push_back(d);
  return memref::CollapseShapeOp::create(
      b, loc, v, ArrayRef<ReassociationIndices>{rows, cols});
}

/// The view of the whole output `acc` that an output tile `out` is: `out`
/// itself, or the view it is a rank-reducing view of (a batch matmul's
/// tile as a 2-D matmul); null when it is none.
memref::SubViewOp accTileView(Value out, Value acc) {
  auto view = out.getDefiningOp<memref::SubViewOp>();
  while (view && view.getSource() != acc) {
    if (!llvm::all_of(view.getMixedOffsets(), isZeroInteger) ||
        !view.hasUnitStride())
      return {};
    view = view.getSource().getDefiningOp<memref::SubViewOp>();
  }
  return view;
}

/// A direct epilogue (tgc::isDirectEpilogue) on the tile of `acc` at
/// `offsets` x `sizes`, built at `b`'s insertion point: each operand's tile
/// through its map, the same maps, and linalg.index shifted by the tile's
/// offsets.
void cloneDirectEpilogue(OpBuilder &b, linalg::GenericOp epilogue, Value acc,
                         Value accTile, ArrayRef<OpFoldResult> offsets,
                         ArrayRef<OpFoldResult> sizes) {
  Location loc = epilogue.getLoc();
  SmallVector<Value> parts;
  for (OpOperand &operand : epilogue->getOpOperands()) {
    Value v = operand.get();
    AffineMap map = epilogue.getMatchingIndexingMap(&operand);
    if (tgc::rootBuffer(v) == acc) {
      parts.push_back(accTile);
      continue;
    }
    if (map.getNumResults() == 0) {
      parts.push_back(v);
      continue;
    }
    SmallVector<OpFoldResult> o, z, one(map.getNumResults(), b.getIndexAttr(1));
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      o.push_back(offsets[map.getDimPosition(r)]);
      z.push_back(sizes[map.getDimPosition(r)]);
    }
    parts.push_back(memref::SubViewOp::create(b, loc, v, o, z, one));
  }
  unsigned inputs = epilogue.getNumDpsInputs();
  auto fused = linalg::GenericOp::create(
      b, loc, TypeRange{}, ArrayRef<Value>(parts).take_front(inputs),
      ArrayRef<Value>(parts).drop_front(inputs),
      epilogue.getIndexingMapsArray(), epilogue.getIteratorTypesArray());
  IRMapping map;
  epilogue.getRegion().cloneInto(&fused.getRegion(), map);
  for (linalg::IndexOp index :
       llvm::to_vector(fused.getBody()->getOps<linalg::IndexOp>())) {
    OpFoldResult offset = offsets[index.getDim()];
    if (isZeroInteger(offset))
      continue;
    OpBuilder inner(index->getContext());
    inner.setInsertionPointAfter(index);
    Value shifted = arith::AddIOp::create(
        inner, loc, index, getValueOrCreateConstantIndexOp(inner, loc, offset));
    index.getResult().replaceAllUsesExcept(shifted, shifted.getDefiningOp());
  }
}

/// After the output tiles exist: each epilogue runs on the tile right after
/// the tile's product (an f32 product's tile, or the tile view that a
/// vdpbf16ps product leaves after its K loop), and the whole-buffer loop
/// goes.
void fuseEpilogues(ModuleOp module, ArrayRef<linalg::GenericOp> epilogues) {
  llvm::DenseMap<Operation *, SmallVector<Value>> matrices;
  llvm::DenseSet<Operation *> fusedAway;
  OpBuilder b(module.getContext());
  // Each tile (the op after which the epilogue goes) and its output.
  SmallVector<std::pair<Operation *, Value>> tiles;
  module.walk([&](Operation *op) {
    if (!op->hasAttr(kEpilogueAttr))
      return;
    if (auto product = llvm::dyn_cast<linalg::LinalgOp>(op))
      tiles.emplace_back(op, product.getDpsInits()[0]);
    else if (auto view = llvm::dyn_cast<memref::SubViewOp>(op))
      tiles.emplace_back(op, view.getResult());
  });
  for (auto [tile, out] : tiles) {
    int64_t index =
        llvm::cast<IntegerAttr>(tile->getAttr(kEpilogueAttr)).getInt();
    tile->removeAttr(kEpilogueAttr);
    linalg::GenericOp epilogue = epilogues[index];
    Value acc = tgc::rootBuffer(out);
    if (tgc::isDirectEpilogue(epilogue, acc)) {
      SmallVector<OpFoldResult> offsets, sizes;
      Value accTile = acc;
      if (out != acc) {
        memref::SubViewOp view = accTileView(out, acc);
        if (!view)
          continue; // not a tile of the whole output: the loop stays
        offsets = view.getMixedOffsets();
        sizes = view.getMixedSizes();
        accTile = view;
      } else {
        auto type = llvm::cast<MemRefType>(acc.getType());
        for (int64_t size : type.getShape()) {
          offsets.push_back(b.getIndexAttr(0));
          sizes.push_back(b.getIndexAttr(size));
        }
      }
      b.setInsertionPointAfter(tile);
      cloneDirectEpilogue(b, epilogue, acc, accTile, offsets, sizes);
      fusedAway.insert(epilogue);
      continue;
    }
    auto view = out.getDefiningOp<memref::SubViewOp>();
    if (view ? view.getSource() != acc : out != acc)
      continue; // not a tile of the whole output: the loop stays
    // [M, N] views of the epilogue's operands, made once, before the
    // output's tile loop (where the whole buffers exist).
    SmallVector<Value> &whole = matrices[epilogue];
    if (whole.empty()) {
      Operation *outer = tile;
      while (outer->getBlock() != acc.getParentBlock())
        outer = outer->getParentOp();
      b.setInsertionPoint(outer);
      int64_t n = llvm::cast<MemRefType>(acc.getType()).getDimSize(1);
      for (Value v : epilogue->getOperands())
        whole.push_back(tgc::rootBuffer(v) == acc
                            ? acc
                            : asMatrix(b, epilogue.getLoc(), v, n));
    }
    b.setInsertionPointAfter(tile);
    SmallVector<OpFoldResult> offsets, sizes, strides(2, b.getIndexAttr(1));
    if (view) {
      offsets = view.getMixedOffsets();
      sizes = view.getMixedSizes();
    } else {
      auto type = llvm::cast<MemRefType>(acc.getType());
      offsets = {b.getIndexAttr(0), b.getIndexAttr(0)};
      sizes = {b.getIndexAttr(type.getDimSize(0)),
               b.getIndexAttr(type.getDimSize(1))};
    }
    SmallVector<Value> parts;
    for (Value v : whole)
      parts.push_back(v == acc
                          ? out
                          : memref::SubViewOp::create(b, tile->getLoc(), v,
                                                      offsets, sizes, strides)
                                .getResult());
    unsigned inputs = epilogue.getNumDpsInputs();
    AffineMap identity = b.getMultiDimIdentityMap(2);
    auto fused = linalg::GenericOp::create(
        b, epilogue.getLoc(), TypeRange{},
        ArrayRef<Value>(parts).take_front(inputs),
        ArrayRef<Value>(parts).drop_front(inputs),
        SmallVector<AffineMap>(parts.size(), identity),
        SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel));
    IRMapping map;
    epilogue.getRegion().cloneInto(&fused.getRegion(), map);
    fusedAway.insert(epilogue);
  }
  for (linalg::GenericOp epilogue : epilogues)
    if (fusedAway.contains(epilogue))
      epilogue->erase();
}

constexpr llvm::StringLiteral kOutputTransposeAttr = "tgc.output_transpose";

/// Each batch product whose output goes to a new layout (findOutputTranspose)
/// carries the transpose's index; the new layout's buffer moves before it.
SmallVector<linalg::TransposeOp> takeOutputTransposes(ModuleOp module) {
  SmallVector<std::pair<linalg::LinalgOp, linalg::TransposeOp>> found;
  module.walk([&](linalg::LinalgOp op) {
    if (tgc::cpu::readsHeadsInPlace(op))
      if (linalg::TransposeOp transpose = tgc::findOutputTranspose(op))
        found.emplace_back(op, transpose);
  });
  SmallVector<linalg::TransposeOp> transposes;
  Builder b(module.getContext());
  for (auto [product, transpose] : found) {
    hoistBefore(transpose.getInit(), product);
    product->setAttr(kOutputTransposeAttr,
                     b.getI64IntegerAttr(transposes.size()));
    transposes.push_back(transpose);
  }
  return transposes;
}

/// The rows and columns of head h = bh mod H of sequence b = bh / H that
/// `view` (a [1, rows, cols] tile of a [B·H, S, N] buffer) selects, as a
/// 2-D view of `sequence`, the same values in the sequence's layout
/// [B, S, H, ...] (row-major). The view is of `sequence` collapsed to
/// [B, S, H·N], so that a tile is a [1, rows, cols] view like a batch
/// matmul's own and its transfers fold onto one buffer.
Value sequenceTile(OpBuilder &b, Location loc, Value sequence,
                   memref::SubViewOp view, Operation *at) {
  auto type = llvm::cast<MemRefType>(sequence.getType());
  int64_t heads = type.getDimSize(2);
  int64_t columns =
      type.getNumElements() / (type.getDimSize(0) * type.getDimSize(1) * heads);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfterValue(sequence);
  SmallVector<ReassociationIndices> groups{{0}, {1}, {}};
  for (int64_t d = 2; d < type.getRank(); ++d)
    groups.back().push_back(d);
  Value rows = memref::CollapseShapeOp::create(b, loc, sequence, groups);
  b.setInsertionPoint(at);
  SmallVector<OpFoldResult> offsets = view.getMixedOffsets(),
                            sizes = view.getMixedSizes();
  Value bh = getValueOrCreateConstantIndexOp(b, loc, offsets[0]);
  Value col = getValueOrCreateConstantIndexOp(b, loc, offsets[2]);
  AffineExpr d0 = b.getAffineDimExpr(0), d1 = b.getAffineDimExpr(1);
  Value seq = affine::AffineApplyOp::create(
      b, loc, AffineMap::get(1, 0, d0.floorDiv(heads)), bh);
  Value headColumn = affine::AffineApplyOp::create(
      b, loc, AffineMap::get(2, 0, (d0 % heads) * columns + d1),
      ValueRange{bh, col});
  SmallVector<OpFoldResult> o{seq, offsets[1], headColumn};
  SmallVector<OpFoldResult> z{b.getIndexAttr(1), sizes[1], sizes[2]};
  SmallVector<OpFoldResult> one(3, b.getIndexAttr(1));
  SmallVector<int64_t> tileShape;
  for (OpFoldResult size : {sizes[1], sizes[2]}) {
    std::optional<int64_t> c = getConstantIntValue(size);
    tileShape.push_back(c ? *c : ShapedType::kDynamic);
  }
  auto reduced = memref::SubViewOp::inferRankReducedResultType(
      tileShape, llvm::cast<MemRefType>(rows.getType()), o, z, one);
  return memref::SubViewOp::create(b, loc, llvm::cast<MemRefType>(reduced),
                                   rows, o, z, one);
}

/// After the output tiles exist (as 2-D matmuls on rank-reduced views of
/// [1, mt, nt] tiles of the [B·H, S, N] output): each tile writes straight
/// into the [B, S, H, N] buffer (sequenceTile), and the whole-buffer
/// transpose goes, with the output buffer nothing reads any more.
void writeOutputTilesTransposed(
    ModuleOp module, MutableArrayRef<linalg::TransposeOp> transposes) {
  OpBuilder b(module.getContext());
  for (linalg::LinalgOp tile :
       opsWithAttr<linalg::LinalgOp>(module, kOutputTransposeAttr)) {
    int64_t index =
        llvm::cast<IntegerAttr>(tile->getAttr(kOutputTransposeAttr)).getInt();
    tile->removeAttr(kOutputTransposeAttr);
    linalg::TransposeOp transpose = transposes[index];
    Value out = tile.getDpsInits()[0];
    memref::SubViewOp view = accTileView(out, tgc::rootBuffer(out));
    if (!view || !transpose)
      continue; // not a tile of the whole output: the transpose stays
    tile.getDpsInitsMutable()[0].set(
        sequenceTile(b, tile.getLoc(), transpose.getInit(), view, tile));
    // The transpose goes; so does the [B·H, S, N] buffer, which only
    // views and its deallocation use now (canonicalisation).
    Operation *expand = transpose.getInput().getDefiningOp();
    transpose->erase();
    transposes[index] = {};
    if (expand && expand->use_empty())
      expand->erase();
  }
}

constexpr llvm::StringLiteral kHeadsOperandsAttr = "tgc.heads_operands";

/// Layout changes into heads read only by products (findHeadsOperand), and
/// per product which of its two inputs each feeds (-1: neither).
struct HeadsOperands {
  SmallVector<linalg::TransposeOp> transposes;
  SmallVector<int64_t> pendingReaders;
};

HeadsOperands takeHeadsOperands(ModuleOp module) {
  HeadsOperands found;
  SmallVector<linalg::TransposeOp> candidates;
  module.walk([&](linalg::TransposeOp op) { candidates.push_back(op); });
  Builder b(module.getContext());
  for (linalg::TransposeOp transpose : candidates) {
    memref::CollapseShapeOp collapse =
        tgc::findHeadsOperand(transpose, [](Operation *product) {
          return tgc::cpu::readsHeadsInPlace(product);
        });
    if (!collapse)
      continue;
    int64_t index = found.transposes.size();
    found.transposes.push_back(transpose);
    found.pendingReaders.push_back(0);
    for (OpOperand &use : collapse->getUses()) {
      Operation *product = use.getOwner();
      SmallVector<int64_t> marks{-1, -1};
      if (auto old =
              product->getAttrOfType<DenseI64ArrayAttr>(kHeadsOperandsAttr))
        marks.assign(old.asArrayRef().begin(), old.asArrayRef().end());
      marks[use.getOperandNumber()] = index;
      product->setAttr(kHeadsOperandsAttr, b.getDenseI64ArrayAttr(marks));
      ++found.pendingReaders[index];
    }
  }
  return found;
}

/// After the output tiles exist: each tile reads its rows of a head
/// straight from the sequence's layout (sequenceTile); a transpose all of
/// whose readers do goes.
void readHeadsOperandsInPlace(ModuleOp module, HeadsOperands &found) {
  OpBuilder b(module.getContext());
  for (linalg::LinalgOp tile :
       opsWithAttr<linalg::LinalgOp>(module, kHeadsOperandsAttr)) {
    ArrayRef<int64_t> marks =
        tile->getAttrOfType<DenseI64ArrayAttr>(kHeadsOperandsAttr).asArrayRef();
    SmallVector<int64_t> indices(marks);
    tile->removeAttr(kHeadsOperandsAttr);
    for (auto [operand, index] : llvm::enumerate(indices)) {
      if (index < 0)
        continue;
      linalg::TransposeOp transpose = found.transposes[index];
      Value in = tile.getDpsInputs()[operand];
      auto users = transpose.getInit().getUsers();
      auto collapse =
          llvm::find_if(users, llvm::IsaPred<memref::CollapseShapeOp>);
      memref::SubViewOp view = collapse == users.end()
                                   ? nullptr
                                   : accTileView(in, (*collapse)->getResult(0));
      if (!view)
        continue; // this reader keeps the transposed copy
      tile.getDpsInputOperands()[operand]->set(
          sequenceTile(b, tile.getLoc(), transpose.getInput(), view, tile));
      if (--found.pendingReaders[index] == 0)
        transpose->erase();
    }
  }
}

/// The transposed-left-operand batch layout: out[b] += a[b]ᵀ · c[b].
SmallVector<AffineMap> transposedLhsBatchMaps(MLIRContext *ctx) {
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  return {AffineMap::get(4, 0, {d(0), d(3), d(1)}, ctx),
          AffineMap::get(4, 0, {d(0), d(3), d(2)}, ctx),
          AffineMap::get(4, 0, {d(0), d(1), d(2)}, ctx)};
}

bool isScheduledBatchLayout(linalg::LinalgOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  return maps ==
             linalg::BatchMatmulOp::getDefaultIndexingMaps(op.getContext()) ||
         maps == transposedLhsBatchMaps(op.getContext());
}

/// A tiled `linalg.batch_matmul` over one batch entry becomes a 2-D
/// `linalg.matmul` on rank-reduced views (with the transposed left operand's
/// map where it has one), which phase 2 schedules.
void rankReduceUnitBatches(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  for (linalg::BatchMatmulOp op :
       opsWithAttr<linalg::BatchMatmulOp>(module, kScheduleAttr)) {
    auto dropBatch = [&](Value v) -> Value {
      auto type = llvm::cast<MemRefType>(v.getType());
      SmallVector<OpFoldResult> offsets(3, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes{rewriter.getIndexAttr(1)};
      for (int d = 1; d < 3; ++d)
        sizes.push_back(type.isDynamicDim(d)
                            ? OpFoldResult(memref::DimOp::create(
                                               rewriter, op.getLoc(), v, d)
                                               .getResult())
                            : rewriter.getIndexAttr(type.getDimSize(d)));
      auto reduced = memref::SubViewOp::inferRankReducedResultType(
          {type.getDimSize(1), type.getDimSize(2)}, type, offsets, sizes,
          strides);
      return memref::SubViewOp::create(rewriter, op.getLoc(), reduced, v,
                                       offsets, sizes, strides);
    };
    rewriter.setInsertionPoint(op);
    Value a = dropBatch(op.getDpsInputs()[0]),
          b = dropBatch(op.getDpsInputs()[1]),
          c = dropBatch(op.getDpsInits()[0]);
    linalg::MatmulOp mm;
    if (op.getIndexingMapsArray() == transposedLhsBatchMaps(op.getContext())) {
      MLIRContext *ctx = op.getContext();
      auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
      SmallVector<AffineMap> maps{AffineMap::get(3, 0, {d(2), d(0)}, ctx),
                                  AffineMap::get(3, 0, {d(2), d(1)}, ctx),
                                  AffineMap::get(3, 0, {d(0), d(1)}, ctx)};
      mm = linalg::MatmulOp::create(
          rewriter, op.getLoc(), TypeRange{}, ValueRange{a, b}, ValueRange{c},
          ArrayRef<NamedAttribute>{rewriter.getNamedAttr(
              "indexing_maps", rewriter.getAffineMapArrayAttr(maps))});
    } else {
      mm = linalg::MatmulOp::create(rewriter, op.getLoc(), ValueRange{a, b},
                                    ValueRange{c});
    }
    mm->setAttr(kScheduleAttr, op->getAttr(kScheduleAttr));
    for (StringRef carried : {kTileInitAttr, kEpilogueAttr,
                              kOutputTransposeAttr, kHeadsOperandsAttr})
      if (Attribute attr = op->getAttr(carried))
        mm->setAttr(carried, attr);
    rewriter.eraseOp(op);
  }
}

struct TGCVectorizeMatmulsPass
    : tgc::cpu::impl::TGCVectorizeMatmulsPassBase<TGCVectorizeMatmulsPass> {
  using Base::Base;

  LogicalResult runSchedule(ModuleOp module, const std::string &text) {
    OwningOpRef<ModuleOp> schedule =
        parseSourceString<ModuleOp>(text, &getContext());
    if (!schedule)
      return module.emitError(
          "tgc-vectorize-matmuls: internal error: bad schedule");
    Operation *entry = nullptr;
    schedule->walk([&](transform::NamedSequenceOp seq) { entry = seq; });
    return transform::applyTransformNamedSequence(
        module, entry, *schedule, transform::TransformOptions());
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (vectorBits < 128 || vectorBits % 32 != 0 || vectorRegisters < 4) {
      module.emitError("tgc-vectorize-matmuls: unsupported vector unit (")
          << vectorBits << " bits, " << vectorRegisters << " registers)";
      return signalPassFailure();
    }
    VectorUnit cpu{vectorBits / 32, vectorRegisters, l1CacheBytes,
                   l2CacheBytes};
    std::optional<MatmulTiles> forced;
    if (!tiles.empty()) {
      std::string error;
      if (!(forced = forcedTiles(*tiles, cpu, error))) {
        module.emitError("tgc-vectorize-matmuls: ") << error;
        return signalPassFailure();
      }
    }
    // Before anything changes the products (AMX, widening): the same
    // predicate as `tgc stats`' count, on the same IR.
    SmallVector<linalg::GenericOp> epilogues;
    SmallVector<linalg::TransposeOp> outputTransposes;
    HeadsOperands headsOperands;
    if (fillTiles) {
      headsOperands = takeHeadsOperands(module);
      outputTransposes = takeOutputTransposes(module);
      takeAccumulatorFills(module, amx, bf16Dot);
      epilogues = takeEpilogues(module, amx);
    }
    if (amx)
      tgc::cpu::emitAMXProducts(module);
    else if (bf16Dot && cpu.lanes == 16)
      tgc::cpu::emitDotBF16Products(
          module,
          [&](int64_t m, int64_t n, int64_t kPairs) {
            // A pair of bf16 takes the bytes of one f32: the f32 model
            // over K/2 sizes the tiles.
            MatmulTiles t =
                forced ? *forced : chooseTiles(m, n, kPairs, 1, cpu, threads);
            return tgc::cpu::DotTiles{t.mt, t.nt, t.kt, t.mr,
                                      roundUp(t.nr, cpu.lanes)};
          },
          fillTiles);
    // The emitters took their products: the rest read f32.
    prepareProductOperands(module, epilogues,
                           [](Operation *) { return false; });
    // The widened products are f32 ones now: their output tiles take their
    // fills too (a separate fill wrote the whole output to memory first).
    if (fillTiles)
      takeAccumulatorFills(module, amx, bf16Dot);
    std::map<std::string, MatmulTiles> configs;
    module.walk([&](linalg::LinalgOp op) {
      if (!isScheduledProduct(op))
        return;
      bool batched = llvm::isa<linalg::BatchMatmulOp>(op);
      // Loop ranges (…, M, N, K) whatever the operands' layouts.
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      size_t r = ranges.size();
      int64_t batch = 1;
      for (size_t d = 0; d + 3 < r; ++d)
        batch *= ranges[d];
      MatmulTiles t = forced ? *forced
                             : chooseTiles(ranges[r - 3], ranges[r - 2],
                                           ranges[r - 1], batch, cpu, threads);
      // Inside a parallel task (attention's per-head tasks): the task is
      // the thread's share, so its products are one output tile each.
      if (op->getParentOfType<scf::ForallOp>()) {
        t.mt = roundUp(ranges[r - 3], t.mr);
        t.nt = roundUp(ranges[r - 2], t.nr);
      }
      t.batched = batched;
      configs.emplace(t.key(), t);
      op->setAttr(kScheduleAttr, StringAttr::get(&getContext(), t.key()));
    });
    if (configs.empty()) {
      fillOutputTiles(module);
      fuseEpilogues(module, epilogues);
      return;
    }
    if (failed(runSchedule(module, forallSchedule(configs))))
      return signalPassFailure();
    rankReduceUnitBatches(module);
    writeOutputTilesTransposed(module, outputTransposes);
    readHeadsOperandsInPlace(module, headsOperands);
    fillOutputTiles(module);
    fuseEpilogues(module, epilogues);
    for (auto &entry : configs)
      entry.second.batched = false;
    int64_t lanes = vectorBits / 32;
    if (failed(runSchedule(module, registerSchedule(configs, lanes))) ||
        failed(vectorizeTiles(module, configs, lanes)) ||
        failed(runSchedule(module, cleanupSchedule())))
      return signalPassFailure();
    hoistAccumulators(module);
    hoistTileAccumulators(module);
    if (failed(runSchedule(module, loweringSchedule())))
      return signalPassFailure();
    module.walk([](Operation *op) { op->removeAttr(kScheduleAttr); });
  }
};

} // namespace

void tgc::cpu::prepareProductOperandsForCount(ModuleOp module, bool amx,
                                              bool bf16Dot) {
  prepareProductOperands(module, {}, [&](Operation *product) {
    return isEmittedProduct(product, amx, bf16Dot);
  });
}

bool tgc::cpu::readsHeadsInPlace(Operation *op) {
  auto product = llvm::dyn_cast<linalg::LinalgOp>(op);
  return product && isScheduledProduct(product) && isF32Product(product);
}

bool tgc::cpu::fusesIntoProductTiles(Operation *op, bool amx) {
  auto product = llvm::dyn_cast<linalg::LinalgOp>(op);
  if (!product || !isScheduledProduct(product))
    return false;
  if (isF32Product(product))
    return true;
  // Narrow operands widened to f32 (widenNarrowOperands) make an f32
  // product of it, tiled like one; vdpbf16ps products fill their registers
  // and leave each output tile to its epilogue (emitDotBF16Products). Not
  // the products on AMX tiles, whose tiles go through memory per K step.
  return getElementTypeOrSelf(product.getDpsInits()[0].getType()).isF32() &&
         !(amx && tgc::cpu::isAMXProduct(op));
}
