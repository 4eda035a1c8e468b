//===- TileFusion.cpp - fills, epilogues and layouts in product tiles -----===//
//
// What tgc-vectorize-matmuls fuses into each product's output tiles: the
// accumulator fills, elementwise epilogues, transposed output writes and
// head-major operand reads; and unit batches reduced to 2-D products.
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

/// The ops of `module` marked with `idAttr` (an index), by index; null
/// where none is.
template <typename OpTy>
static SmallVector<OpTy> collectById(ModuleOp module, StringRef idAttr) {
  SmallVector<OpTy> byId;
  module.walk([&](OpTy op) {
    auto id = op->template getAttrOfType<IntegerAttr>(idAttr);
    if (!id)
      return;
    if (byId.size() <= static_cast<size_t>(id.getInt()))
      byId.resize(id.getInt() + 1);
    byId[id.getInt()] = op;
  });
  return byId;
}

/// Drops `idAttr` from the ops of `module` that still carry it.
static void dropIds(ModuleOp module, StringRef idAttr) {
  module.walk([&](Operation *op) { op->removeAttr(idAttr); });
}

SmallVector<linalg::GenericOp> collectEpilogues(ModuleOp module) {
  return collectById<linalg::GenericOp>(module, kEpilogueIdAttr);
}

void takeEpilogues(ModuleOp module, bool amx) {
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
    epilogue->setAttr(kEpilogueIdAttr, b.getI64IntegerAttr(epilogues.size()));
    epilogues.push_back(epilogue);
  }
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

void fuseEpilogues(ModuleOp module) {
  SmallVector<linalg::GenericOp> epilogues = collectEpilogues(module);
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
    if (epilogue && fusedAway.contains(epilogue))
      epilogue->erase();
  dropIds(module, kEpilogueIdAttr);
}

constexpr llvm::StringLiteral kOutputTransposeAttr = "tgc.output_transpose";

constexpr llvm::StringLiteral kOutputTransposeIdAttr =
    "tgc.output_transpose_id";

void takeOutputTransposes(ModuleOp module) {
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
    transpose->setAttr(kOutputTransposeIdAttr,
                       b.getI64IntegerAttr(transposes.size()));
    transposes.push_back(transpose);
  }
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

void writeOutputTilesTransposed(ModuleOp module) {
  SmallVector<linalg::TransposeOp> transposes =
      collectById<linalg::TransposeOp>(module, kOutputTransposeIdAttr);
  OpBuilder b(module.getContext());
  for (linalg::LinalgOp tile :
       opsWithAttr<linalg::LinalgOp>(module, kOutputTransposeAttr)) {
    int64_t index =
        llvm::cast<IntegerAttr>(tile->getAttr(kOutputTransposeAttr)).getInt();
    tile->removeAttr(kOutputTransposeAttr);
    linalg::TransposeOp transpose =
        static_cast<size_t>(index) < transposes.size() ? transposes[index]
                                                       : nullptr;
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
  dropIds(module, kOutputTransposeIdAttr);
}

constexpr llvm::StringLiteral kHeadsOperandsAttr = "tgc.heads_operands";

constexpr llvm::StringLiteral kHeadsTransposeIdAttr = "tgc.heads_transpose_id";
/// On such a transpose: how many product operands read its collapse.
constexpr llvm::StringLiteral kHeadsReadersAttr = "tgc.heads_readers";

void takeHeadsOperands(ModuleOp module) {
  int64_t found = 0;
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
    int64_t index = found++;
    int64_t readers = 0;
    for (OpOperand &use : collapse->getUses()) {
      Operation *product = use.getOwner();
      SmallVector<int64_t> marks{-1, -1};
      if (auto old =
              product->getAttrOfType<DenseI64ArrayAttr>(kHeadsOperandsAttr))
        marks.assign(old.asArrayRef().begin(), old.asArrayRef().end());
      marks[use.getOperandNumber()] = index;
      product->setAttr(kHeadsOperandsAttr, b.getDenseI64ArrayAttr(marks));
      ++readers;
    }
    transpose->setAttr(kHeadsTransposeIdAttr, b.getI64IntegerAttr(index));
    transpose->setAttr(kHeadsReadersAttr, b.getI64IntegerAttr(readers));
  }
}

void readHeadsOperandsInPlace(ModuleOp module) {
  SmallVector<linalg::TransposeOp> transposes =
      collectById<linalg::TransposeOp>(module, kHeadsTransposeIdAttr);
  SmallVector<int64_t> pendingReaders;
  for (linalg::TransposeOp transpose : transposes)
    pendingReaders.push_back(
        transpose
            ? transpose->getAttrOfType<IntegerAttr>(kHeadsReadersAttr).getInt()
            : 0);
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
      linalg::TransposeOp transpose =
          static_cast<size_t>(index) < transposes.size() ? transposes[index]
                                                         : nullptr;
      if (!transpose)
        continue;
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
      if (--pendingReaders[index] == 0) {
        transpose->erase();
        transposes[index] = {};
      }
    }
  }
  dropIds(module, kHeadsTransposeIdAttr);
  dropIds(module, kHeadsReadersAttr);
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

} // namespace tgc::cpu::matmuls
