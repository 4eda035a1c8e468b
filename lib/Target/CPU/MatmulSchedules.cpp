//===- MatmulSchedules.cpp - transform schedules of the CPU matmuls -------===//
//
// Phases 1-5 of tgc-vectorize-matmuls: parallel output tiles, K and
// register tiles, vectorisation, cleanup with accumulator hoisting, and the
// lowering to FMAs, as transform-dialect scripts run on the module.
//
//===----------------------------------------------------------------------===//

#include "MatmulStages.h"
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

using namespace mlir;
using namespace tgc::cpu;

namespace tgc::cpu::matmuls {

/// Marks tiles of the peeled whole-vector column loop: their width is one
/// vector even where the bound is too indirect for the peeling's own
/// simplification to make it static.
constexpr llvm::StringLiteral kFullVectorAttr = "tgc.full_vector_columns";

const char *kHeader = "module attributes {transform.with_named_sequence} {\n"
                      "transform.named_sequence @__transform_main(%root: "
                      "!transform.any_op {transform.readonly}) {\n";
const char *kFooter = "  transform.yield\n}\n}\n";

tg::MatmulTilingAttr tilingAttr(MLIRContext *ctx, const MatmulTiles &t) {
  return tg::MatmulTilingAttr::get(ctx, t.mt, t.nt, t.kt, t.mr, t.nr,
                                   t.batched);
}

MatmulTiles tilesOf(tg::MatmulTilingAttr attr) {
  MatmulTiles t;
  t.mt = attr.getTileM();
  t.nt = attr.getTileN();
  t.kt = attr.getTileK();
  t.mr = attr.getRegisterM();
  t.nr = attr.getRegisterN();
  t.batched = attr.getBatched();
  return t;
}

/// `attributes{tg.tiling = #tg.matmul_tiling<...>}` of a transform match.
static std::string matchAttr(MLIRContext *ctx, const MatmulTiles &t) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "attributes{" << kScheduleAttr << " = " << tilingAttr(ctx, t) << "}";
  return text;
}

std::string forallSchedule(MLIRContext *ctx,
                           const std::map<std::string, MatmulTiles> &configs) {
  std::string s = kHeader;
  llvm::raw_string_ostream os(s);
  for (auto &[key, t] : configs)
    os << llvm::formatv(
        "  %mm_{0} = transform.structured.match ops{{[\"linalg.matmul\", "
        "\"linalg.batch_matmul\"]} "
        "{1} in %root : (!transform.any_op) -> "
        "!transform.any_op\n"
        "  %p_{0}, %pl_{0} = transform.structured.tile_using_forall %mm_{0} "
        "tile_sizes "
        "[{2}{3}, {4}] : (!transform.any_op) -> (!transform.any_op, "
        "!transform.any_op)\n",
        key, matchAttr(ctx, t), t.batched ? "1, " : "", t.mt, t.nt);
  os << kFooter;
  return s;
}

std::string registerSchedule(MLIRContext *ctx,
                             const std::map<std::string, MatmulTiles> &configs,
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
        "{1} in %root : (!transform.any_op) -> "
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
        key, matchAttr(ctx, t), t.kt, t.mr, t.nr);
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
        "{1} in %root : (!transform.any_op) -> "
        "!transform.any_op\n"
        "  transform.foreach %all_{0} : !transform.any_op {{\n"
        "  ^bb0(%uop_{0}: !transform.any_op):\n"
        "  %u_{0}, %ul_{0} = transform.structured.tile_using_for %uop_{0} "
        "tile_sizes [0, 0, 1] "
        ": (!transform.any_op) -> (!transform.any_op, !transform.any_op)\n"
        "  }\n",
        key, matchAttr(ctx, t));
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

LogicalResult vectorizeTiles(ModuleOp module, int64_t lanes) {
  SmallVector<linalg::MatmulOp> tiles;
  module.walk([&](linalg::MatmulOp op) {
    if (op->hasAttr(kScheduleAttr))
      tiles.push_back(op);
  });
  IRRewriter rewriter(module.getContext());
  for (linalg::MatmulOp op : tiles) {
    MatmulTiles t =
        tilesOf(op->getAttrOfType<tg::MatmulTilingAttr>(kScheduleAttr));
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

} // namespace tgc::cpu::matmuls
