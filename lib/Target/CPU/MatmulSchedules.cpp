//===- MatmulSchedules.cpp - transform schedules of the CPU matmuls -------===//
//
// Phases 1-5 of tgc-vectorize-matmuls: parallel output tiles, K and
// register tiles, vectorisation, cleanup with accumulator hoisting, and the
// lowering to FMAs, as transform-dialect scripts built with the transform
// ops' builders and run on the module by the interpreter.
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
#include "mlir/Dialect/Linalg/TransformOps/LinalgTransformOps.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/TransformOps/MemRefTransformOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/TransformOps/SCFTransformOps.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/IR/TransformOps.h"
#include "mlir/Dialect/Transform/IR/TransformTypes.h"
#include "mlir/Dialect/Transform/Transforms/TransformInterpreterUtils.h"
#include "mlir/Dialect/Vector/TransformOps/VectorTransformOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

#include <map>

using namespace mlir;
using namespace tgc::cpu;

namespace tgc::cpu::matmuls {

/// Marks tiles of the peeled whole-vector column loop: their width is one
/// vector even where the bound is too indirect for the peeling's own
/// simplification to make it static.
constexpr llvm::StringLiteral kFullVectorAttr = "tgc.full_vector_columns";

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

namespace {

using BodyFn = llvm::function_ref<void(OpBuilder &, Value)>;

/// A transform script: @__transform_main(%root) of a module with named
/// sequences, its body made by `body`.
OwningOpRef<ModuleOp> buildScript(MLIRContext *ctx, BodyFn body) {
  Location loc = UnknownLoc::get(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr(transform::TransformDialect::kWithNamedSequenceAttrName,
                     UnitAttr::get(ctx));
  OpBuilder b = OpBuilder::atBlockEnd(module->getBody());
  NamedAttribute readonly(
      StringAttr::get(ctx, transform::TransformDialect::kArgReadOnlyAttrName),
      UnitAttr::get(ctx));
  transform::NamedSequenceOp::create(
      b, loc, "__transform_main", transform::AnyOpType::get(ctx), TypeRange{},
      [&](OpBuilder &nb, Location, BlockArgument root) {
        body(nb, root);
        transform::YieldOp::create(nb, loc);
      },
      /*attrs=*/{}, {DictionaryAttr::get(ctx, {readonly})});
  return module;
}

/// `transform.foreach %handle { ^bb0(%each): body }`.
void forEach(OpBuilder &b, Value handle, BodyFn body) {
  Location loc = b.getUnknownLoc();
  auto each = transform::ForeachOp::create(b, loc, TypeRange{},
                                           ValueRange{handle}, false);
  OpBuilder::InsertionGuard guard(b);
  Block *block = b.createBlock(&each.getBody(), {}, {handle.getType()}, {loc});
  body(b, block->getArgument(0));
  transform::YieldOp::create(b, loc);
}

/// `transform.sequence %target failures(suppress) { ^bb0(%t): body }`.
void ignoringFailures(OpBuilder &b, Value target, BodyFn body) {
  Location loc = b.getUnknownLoc();
  transform::SequenceOp::create(
      b, loc, TypeRange{}, transform::FailurePropagationMode::Suppress, target,
      [&](OpBuilder &sb, Location, BlockArgument arg) {
        body(sb, arg);
        transform::YieldOp::create(sb, loc);
      });
}

/// The matmuls (and batch matmuls with `batched`) in `target`, with the
/// tiling `t` when given.
Value matchProducts(OpBuilder &b, Value target, bool batched,
                    const MatmulTiles *t = nullptr) {
  MLIRContext *ctx = b.getContext();
  SmallVector<StringRef> names{"linalg.matmul"};
  if (batched)
    names.push_back("linalg.batch_matmul");
  DictionaryAttr attrs;
  if (t)
    attrs =
        b.getDictionaryAttr(b.getNamedAttr(kScheduleAttr, tilingAttr(ctx, *t)));
  return transform::MatchOp::create(
      b, b.getUnknownLoc(), transform::AnyOpType::get(ctx), target,
      b.getStrArrayAttr(names), {}, attrs, {}, {});
}

/// `transform.structured.tile_using_for %target tile_sizes sizes`.
transform::TileUsingForOp tileUsingFor(OpBuilder &b, Value target,
                                       ArrayRef<int64_t> sizes) {
  return transform::TileUsingForOp::create(b, b.getUnknownLoc(), target, sizes);
}

/// Peels each loop of `loops` (one handle holds the loops of every matmul
/// of a configuration); `remainder` gets the peeled remainder. A trip count
/// that divides evenly leaves nothing to peel: a suppressed failure.
void peelEach(OpBuilder &b, Value loops, BodyFn remainder) {
  MLIRContext *ctx = b.getContext();
  auto forType = transform::OperationType::get(ctx, "scf.for");
  auto anyOp = transform::AnyOpType::get(ctx);
  forEach(b, loops, [&](OpBuilder &b, Value each) {
    Value loop = transform::CastOp::create(b, b.getUnknownLoc(), forType, each);
    ignoringFailures(b, loop, [&](OpBuilder &b, Value loop) {
      auto peel = transform::LoopPeelOp::create(b, b.getUnknownLoc(), anyOp,
                                                anyOp, loop);
      if (remainder)
        remainder(b, peel.getRemainderLoop());
    });
  });
}

} // namespace

OwningOpRef<ModuleOp>
forallSchedule(MLIRContext *ctx,
               const std::map<std::string, MatmulTiles> &configs) {
  return buildScript(ctx, [&](OpBuilder &b, Value root) {
    for (auto &[key, t] : configs) {
      Value products = matchProducts(b, root, /*batched=*/true, &t);
      SmallVector<int64_t> sizes;
      if (t.batched)
        sizes.push_back(1);
      sizes.append({t.mt, t.nt});
      transform::TileUsingForallOp::create(b, b.getUnknownLoc(), products,
                                           sizes, transform::TileSizesSpec());
    }
  });
}

OwningOpRef<ModuleOp>
registerSchedule(MLIRContext *ctx,
                 const std::map<std::string, MatmulTiles> &configs,
                 int64_t lanes) {
  return buildScript(ctx, [&](OpBuilder &b, Value root) {
    for (auto &[key, t] : configs) {
      Value products = matchProducts(b, root, /*batched=*/false, &t);
      auto k = tileUsingFor(b, products, {0, 0, t.kt});
      auto r = tileUsingFor(b, k.getTiledLinalgOp(), {t.mr, t.nr, 0});
      // Columns: the remainder in whole vectors, their own remainder
      // peeled again (the whole-vector tiles marked).
      BodyFn columns = nullptr;
      auto wholeVectors = [&](OpBuilder &b, Value rest) {
        forEach(b, rest, [&](OpBuilder &b, Value restLoop) {
          Value inRest = matchProducts(b, restLoop, /*batched=*/false);
          forEach(b, inRest, [&](OpBuilder &b, Value product) {
            auto v = tileUsingFor(b, product, {0, lanes, 0});
            Value loop = transform::CastOp::create(
                b, b.getUnknownLoc(),
                transform::OperationType::get(b.getContext(), "scf.for"),
                v.getLoops()[0]);
            ignoringFailures(b, loop, [&](OpBuilder &b, Value loop) {
              auto anyOp = transform::AnyOpType::get(b.getContext());
              auto peel = transform::LoopPeelOp::create(b, b.getUnknownLoc(),
                                                        anyOp, anyOp, loop);
              Value full = matchProducts(b, peel.getPeeledLoop(),
                                         /*batched=*/false);
              transform::AnnotateOp::create(b, b.getUnknownLoc(), full,
                                            kFullVectorAttr, Value());
            });
          });
        });
      };
      if (t.nr > lanes)
        columns = wholeVectors;
      peelEach(b, r.getLoops()[1], columns);
      // Rows: the remainder one row at a time.
      BodyFn rows = nullptr;
      auto singleRows = [&](OpBuilder &b, Value rest) {
        forEach(b, rest, [&](OpBuilder &b, Value restLoop) {
          Value inRest = matchProducts(b, restLoop, /*batched=*/false);
          forEach(b, inRest, [&](OpBuilder &b, Value product) {
            tileUsingFor(b, product, {1, 0, 0});
          });
        });
      };
      if (t.mr > 1)
        rows = singleRows;
      peelEach(b, r.getLoops()[0], rows);
    }
    for (auto &[key, t] : configs) {
      Value all = matchProducts(b, root, /*batched=*/false, &t);
      forEach(b, all, [&](OpBuilder &b, Value product) {
        tileUsingFor(b, product, {0, 0, 1});
      });
    }
    // Folds the tiles' affine.min where the loop bounds decide them (static
    // shapes for the full tiles, also where a peel had nothing to do).
    Value funcs = transform::MatchOp::create(
        b, b.getUnknownLoc(), transform::AnyOpType::get(ctx), root,
        b.getStrArrayAttr({"func.func"}), {}, {}, {}, {});
    transform::ApplyPatternsOp::create(
        b, b.getUnknownLoc(), funcs, [](OpBuilder &pb, Location loc) {
          transform::ApplyCanonicalizationPatternsOp::create(pb, loc);
          transform::ApplyForLoopCanonicalizationPatternsOp::create(pb, loc);
        });
  });
}

/// Each function of the module, as `transform.foreach` of a match.
static void forEachFunction(OpBuilder &b, Value root, BodyFn body) {
  Value funcs = transform::MatchOp::create(
      b, b.getUnknownLoc(), transform::AnyOpType::get(b.getContext()), root,
      b.getStrArrayAttr({"func.func"}), {}, {}, {}, {});
  forEach(b, funcs, body);
}

/// `transform.apply_patterns to %target { patterns }`.
static void
applyPatterns(OpBuilder &b, Value target,
              llvm::function_ref<void(OpBuilder &, Location)> patterns) {
  transform::ApplyPatternsOp::create(b, b.getUnknownLoc(), target, patterns);
}

OwningOpRef<ModuleOp> cleanupSchedule(MLIRContext *ctx) {
  return buildScript(ctx, [&](OpBuilder &b, Value root) {
    forEachFunction(b, root, [&](OpBuilder &b, Value f) {
      applyPatterns(b, f, [](OpBuilder &pb, Location loc) {
        transform::ApplyLowerMaskedTransfersPatternsOp::create(pb, loc);
      });
      applyPatterns(b, f, [](OpBuilder &pb, Location loc) {
        transform::ApplyVectorReductionToContractPatternsOp::create(pb, loc);
        transform::ApplyTransferPermutationPatternsOp::create(pb, loc);
        transform::ApplyFoldMemrefAliasOpsPatternsOp::create(pb, loc);
        transform::ApplyCanonicalizationPatternsOp::create(pb, loc);
      });
      transform::ApplyCommonSubexpressionEliminationOp::create(
          b, b.getUnknownLoc(), f);
      Value loops = transform::MatchOp::create(
          b, b.getUnknownLoc(), transform::AnyOpType::get(b.getContext()), f,
          b.getStrArrayAttr({"scf.for"}), {}, {}, {}, {});
      transform::ApplyLoopInvariantCodeMotionOp::create(b, b.getUnknownLoc(),
                                                        loops);
    });
  });
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

OwningOpRef<ModuleOp> loweringSchedule(MLIRContext *ctx) {
  return buildScript(ctx, [&](OpBuilder &b, Value root) {
    forEachFunction(b, root, [&](OpBuilder &b, Value f) {
      applyPatterns(b, f, [](OpBuilder &pb, Location loc) {
        transform::ApplyLowerContractionPatternsOp::create(
            pb, loc, vector::VectorContractLowering::OuterProduct);
        transform::ApplyTransferPermutationPatternsOp::create(pb, loc);
        transform::ApplyLowerTransferPatternsOp::create(pb, loc,
                                                        /*maxRank=*/1);
        transform::ApplyLowerOuterProductPatternsOp::create(pb, loc);
        transform::ApplyLowerBroadcastPatternsOp::create(pb, loc);
        transform::ApplyLowerShapeCastPatternsOp::create(pb, loc);
      });
      applyPatterns(b, f, [](OpBuilder &pb, Location loc) {
        transform::ApplyCanonicalizationPatternsOp::create(pb, loc);
      });
      applyPatterns(b, f, [](OpBuilder &pb, Location loc) {
        transform::ApplyLowerMasksPatternsOp::create(pb, loc);
      });
    });
  });
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
