//===- BF16Products.cpp - bf16 matmuls on AMX tiles or AVX512-BF16 --------===//
//
// Both instructions read B as pairs along K: element 2p and 2p + 1 of a
// B register or tile row are B[2k][j] and B[2k + 1][j], so B is packed once
// per product as [K'/2][N'][2], zero padded (K' even, N' a multiple of 16).
//
// AMX: tdpbf16ps multiplies a 16 x 32 bf16 tile of A by a 16 x 32 tile of B
// that holds 16 columns as pairs along K (16 K-pairs per tile row) and adds the
// 16 x 16 result to an f32 tile: 8192 multiply-adds per instruction. The
// operands are packed once per product, padded with zeros to whole tiles:
// A as [Mp][Kp], B as [Kp/2][2 Np] (pairs of one column adjacent), and the
// accumulator lives in a padded f32 copy of C, copied back at the end.
//
//===----------------------------------------------------------------------===//

#include "BF16Products.h"
#include "BlockTranspose.h"

#include "tgc/Target/ProductFusion.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using tgc::cpu::DotTiles;

namespace {

constexpr int64_t kRows = 16;  // tile rows (M, and K-pairs of B)
constexpr int64_t kCols = 16;  // f32 columns of the accumulator tile
constexpr int64_t kDepth = 32; // bf16 K elements of one A tile row

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value view(OpBuilder &b, Location loc, Value buffer, ArrayRef<int64_t> offsets,
           ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> strides(offsets.size(), 1);
  return memref::SubViewOp::create(b, loc, buffer, offsets, sizes, strides);
}

/// dst[d...] = src[map(d...)] over all of `dst`, rounded to dst's element
/// type where src's is wider (an f32 source packed as bf16).
void copyInto(OpBuilder &b, Location loc, Value src, Value dst, AffineMap map) {
  auto dstType = llvm::cast<MemRefType>(dst.getType());
  int64_t rank = dstType.getRank();
  Type element = dstType.getElementType();
  linalg::GenericOp::create(
      b, loc, ValueRange{src}, ValueRange{dst},
      ArrayRef<AffineMap>{map, b.getMultiDimIdentityMap(rank)},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value v = args[0];
        if (v.getType() != element)
          v = arith::TruncFOp::create(b, l, element, v);
        linalg::YieldOp::create(b, l, v);
      });
}

/// An operand that one loop rounds from f32 into a buffer of its own,
/// read by nothing but the product: the packing can read the f32 values
/// (`source` at `map` of the operand's indices) and round them itself.
struct RoundedOperand {
  Value source;
  AffineMap map;
  linalg::GenericOp loop; // the rounding loop, dead once packed
};

/// Whether `operand` of `product` is such a buffer: a static buffer written
/// whole by an elementwise `truncf` of f32 values (the copy of a weight
/// that the forward pass, and the backward pass again, makes for its
/// product), which nothing else reads, and whose source nothing between
/// the loop and the product may write (a weight's in-place update comes
/// after its last product).
std::optional<RoundedOperand> roundedOnlyFor(linalg::MatmulOp product,
                                             Value operand) {
  auto alloc = operand.getDefiningOp<memref::AllocOp>();
  if (!alloc || !alloc.getType().hasStaticShape() ||
      !alloc.getType().getLayout().isIdentity() ||
      llvm::count(product.getDpsInputs(), operand) != 1)
    return std::nullopt;
  linalg::GenericOp loop;
  for (OpOperand &use : alloc->getUses()) {
    Operation *user = use.getOwner();
    if (user == product.getOperation() && product.isDpsInput(&use))
      continue;
    if (llvm::isa<memref::DeallocOp>(user))
      continue;
    auto generic = llvm::dyn_cast<linalg::GenericOp>(user);
    if (!generic || loop || !generic.isDpsInit(&use))
      return std::nullopt;
    loop = generic;
  }
  if (!loop || !loop.hasPureBufferSemantics() || loop.getNumDpsInputs() != 1 ||
      loop.getNumDpsInits() != 1 || loop.getNumReductionLoops() != 0 ||
      !loop.getIndexingMapsArray().back().isIdentity() ||
      loop->getBlock() != product->getBlock() ||
      !loop->isBeforeInBlock(product))
    return std::nullopt;
  Block *body = loop.getBody();
  auto yield = llvm::cast<linalg::YieldOp>(body->getTerminator());
  auto round = yield.getOperand(0).getDefiningOp<arith::TruncFOp>();
  // The packing rounds to nearest even, as a truncf without a mode does.
  if (body->getOperations().size() != 2 || !round ||
      round.getIn() != body->getArgument(0) ||
      !round.getIn().getType().isF32() || round.getRoundingmodeAttr())
    return std::nullopt;
  Value source = loop.getDpsInputs()[0];
  Value root = tgc::rootBuffer(source);
  for (Operation *op = loop->getNextNode(); op != product.getOperation();
       op = op->getNextNode())
    if (tgc::mayWriteBuffer(op, root))
      return std::nullopt;
  return RoundedOperand{source, loop.getIndexingMapsArray().front(), loop};
}

/// After its product is gone: the rounding loop that the packing replaced,
/// and its buffer.
void eraseRounded(RewriterBase &b, RoundedOperand rounded) {
  Value buffer = rounded.loop.getDpsInits()[0];
  b.eraseOp(rounded.loop);
  for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
    b.eraseOp(user); // its deallocation
  b.eraseOp(buffer.getDefiningOp());
}

/// A new buffer of `type`, zero filled where the copied operand leaves
/// padding (the tiles read it).
Value tileBuffer(OpBuilder &b, Location loc, MemRefType type, bool padded) {
  Value result = memref::AllocOp::create(b, loc, type);
  if (padded) {
    Value zero =
        arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
    linalg::FillOp::create(b, loc, zero, result);
  }
  return result;
}

/// How a matmul reads its operands: A as [M, K] or [K, M], B as [K, N] or
/// [N, K]; nullopt for other maps.
struct Layout {
  bool transposedA = false, transposedB = false;
};

std::optional<Layout> bf16ProductLayout(linalg::MatmulOp op) {
  if (!op.hasPureBufferSemantics())
    return std::nullopt;
  auto a = llvm::dyn_cast<MemRefType>(op.getDpsInputs()[0].getType());
  auto b = llvm::dyn_cast<MemRefType>(op.getDpsInputs()[1].getType());
  auto c = llvm::dyn_cast<MemRefType>(op.getDpsInits()[0].getType());
  if (!a || !b || !c || !a.hasStaticShape() || !b.hasStaticShape() ||
      !c.hasStaticShape() || a.getNumElements() == 0 ||
      b.getNumElements() == 0 || c.getNumElements() == 0 ||
      !a.getElementType().isBF16() || !b.getElementType().isBF16() ||
      !c.getElementType().isF32())
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  auto map = [&](AffineExpr x, AffineExpr y) {
    return AffineMap::get(3, 0, {x, y}, ctx);
  };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  Layout layout;
  if (maps[2] != map(m, n))
    return std::nullopt;
  if (maps[0] == map(k, m))
    layout.transposedA = true;
  else if (maps[0] != map(m, k))
    return std::nullopt;
  if (maps[1] == map(n, k))
    layout.transposedB = true;
  else if (maps[1] != map(k, n))
    return std::nullopt;
  return layout;
}

/// Whether the rows of `type` have unit stride (vector loads and stores
/// read them whole).
bool hasUnitRows(MemRefType type) {
  int64_t offset;
  SmallVector<int64_t> strides;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// Zeros `buffer[offsets : offsets + sizes]` (nothing when a size is 0): the
/// padding of a packed operand, which its copy does not write.
void zeroRegion(OpBuilder &b, Location loc, Value buffer,
                ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes) {
  if (llvm::any_of(sizes, [](int64_t size) { return size <= 0; }))
    return;
  Type element = llvm::cast<MemRefType>(buffer.getType()).getElementType();
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  linalg::FillOp::create(b, loc, zero, view(b, loc, buffer, offsets, sizes));
}

/// B ([K, N], or [N, K] when `transposed`) as pairs along K: a new
/// [Kp/2][Np][2] buffer with bp[k2, j, p] = B[2 k2 + p, j], zero where that
/// is outside B, viewed as [Kp/2][2 Np].
Value packPairsAlongK(OpBuilder &b, Location loc, Value bm, bool transposed,
                      int64_t k, int64_t n, int64_t kp, int64_t np,
                      std::optional<RoundedOperand> rounded = std::nullopt) {
  MLIRContext *ctx = b.getContext();
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx);
  auto type = MemRefType::get({kp / 2, np, 2}, b.getBF16Type());
  Value bp3 = memref::AllocOp::create(b, loc, type);
  // Zeros in the padding only (the copies below write the rest).
  zeroRegion(b, loc, bp3, {0, n, 0}, {kp / 2, np - n, 2});
  zeroRegion(b, loc, bp3, {(k + 1) / 2, 0, 0}, {kp / 2 - (k + 1) / 2, n, 2});
  if (k % 2)
    zeroRegion(b, loc, bp3, {k / 2, 0, 1}, {1, n, 1});
  auto bMap = [&](AffineExpr row, AffineExpr col) {
    AffineMap map = transposed ? AffineMap::get(3, 0, {col, row}, ctx)
                               : AffineMap::get(3, 0, {row, col}, ctx);
    // Read through the rounding loop: its source at its map of B's indices.
    return rounded ? rounded->map.compose(map) : map;
  };
  Value from = rounded ? rounded->source : bm;
  // A bf16 weight read as [N, K] whose rows have unit stride: its pairs
  // along K are 32-bit words, and packing them is a transpose of words,
  // done in register blocks where they are whole.
  int64_t pairs = k / 2, wholeN = 0, wholePairs = 0;
  auto bmType = llvm::cast<MemRefType>(bm.getType());
  if (transposed && !rounded && bmType.getElementType().isBF16() &&
      hasUnitRows(bmType)) {
    wholeN = n / tgc::cpu::kTransposeBlock * tgc::cpu::kTransposeBlock;
    wholePairs = pairs / tgc::cpu::kTransposeBlock * tgc::cpu::kTransposeBlock;
    if (wholeN && wholePairs) {
      Value words = memref::CollapseShapeOp::create(
          b, loc, bp3, SmallVector<ReassociationIndices>{{0}, {1, 2}});
      tgc::cpu::transposeWholeBlocks(b, loc, bm, words, wholeN, wholePairs,
                                     tgc::cpu::BlockElements::Pairs);
    } else {
      wholeN = wholePairs = 0;
    }
  }
  // The rest element by element: pairs [0, wholePairs) of the columns past
  // wholeN, then the pairs past wholePairs of every column.
  auto copyPairs = [&](int64_t pair, int64_t numPairs, int64_t col,
                       int64_t numCols) {
    if (numPairs <= 0 || numCols <= 0)
      return;
    copyInto(b, loc, from,
             view(b, loc, bp3, {pair, col, 0}, {numPairs, numCols, 2}),
             bMap((d0 + pair) * 2 + d2, d1 + col));
  };
  copyPairs(0, wholePairs, wholeN, n - wholeN);
  copyPairs(wholePairs, pairs - wholePairs, 0, n);
  if (k % 2)
    copyInto(b, loc, from, view(b, loc, bp3, {k / 2, 0, 0}, {1, n, 1}),
             bMap(getAffineConstantExpr(k - 1, ctx), d1));
  return memref::CollapseShapeOp::create(
      b, loc, bp3, SmallVector<ReassociationIndices>{{0}, {1, 2}});
}

void emitAMXProduct(IRRewriter &b, linalg::MatmulOp op, Layout layout) {
  MLIRContext *ctx = b.getContext();
  Location loc = op.getLoc();
  b.setInsertionPoint(op);
  Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1],
        c = op.getDpsInits()[0];
  auto cType = llvm::cast<MemRefType>(c.getType());
  auto aType = llvm::cast<MemRefType>(a.getType());
  int64_t m = cType.getDimSize(0), n = cType.getDimSize(1),
          k = aType.getDimSize(layout.transposedA ? 0 : 1);
  int64_t mp = roundUp(m, kRows), np = roundUp(n, kCols),
          kp = roundUp(k, kDepth);
  Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx);

  // A: [Mp][Kp], zero padded.
  Value ap =
      tileBuffer(b, loc, MemRefType::get({mp, kp}, bf16), mp != m || kp != k);
  copyInto(b, loc, a, view(b, loc, ap, {0, 0}, {m, k}),
           layout.transposedA ? AffineMap::get(2, 0, {d1, d0}, ctx)
                              : b.getMultiDimIdentityMap(2));
  // A weight's copy packed from its f32 values, as on vdpbf16ps.
  std::optional<RoundedOperand> rounded = roundedOnlyFor(op, bm);
  Value bp =
      packPairsAlongK(b, loc, bm, layout.transposedB, k, n, kp, np, rounded);
  // The accumulator: C itself where tiles fit it (whole tiles, rows of unit
  // stride), else a padded f32 copy.
  Value cp = c;
  if (mp != m || np != n || !hasUnitRows(cType)) {
    cp = tileBuffer(b, loc, MemRefType::get({mp, np}, f32), mp != m || np != n);
    copyInto(b, loc, c, view(b, loc, cp, {0, 0}, {m, n}),
             b.getMultiDimIdentityMap(2));
  }

  auto aTile = amx::TileType::get({kRows, kDepth}, bf16);
  auto cTile = amx::TileType::get({kRows, kCols}, f32);
  SmallVector<OpFoldResult> lbs{b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> ubs{b.getIndexAttr(mp), b.getIndexAttr(np)};
  SmallVector<OpFoldResult> steps{b.getIndexAttr(kRows), b.getIndexAttr(kCols)};
  scf::ForallOp::create(
      b, loc, lbs, ubs, steps, ValueRange{}, std::nullopt,
      [&](OpBuilder &b, Location loc, ValueRange ivs) {
        Value i = ivs[0], j = ivs[1];
        Value jPairs = arith::MulIOp::create(b, loc, j, index(b, loc, 2));
        // The accumulator tile goes through memory at each K step: tile
        // values cannot be carried by the loop (its block arguments do not
        // lower to LLVM), and the f32 tile stays in L1.
        scf::ForOp::create(
            b, loc, index(b, loc, 0), index(b, loc, kp), index(b, loc, kDepth),
            ValueRange{},
            [&](OpBuilder &b, Location loc, Value kk, ValueRange) {
              Value k2 = arith::DivUIOp::create(b, loc, kk, index(b, loc, 2));
              Value acc =
                  amx::TileLoadOp::create(b, loc, cTile, cp, ValueRange{i, j});
              Value lhs =
                  amx::TileLoadOp::create(b, loc, aTile, ap, ValueRange{i, kk});
              Value rhs = amx::TileLoadOp::create(b, loc, aTile, bp,
                                                  ValueRange{k2, jPairs});
              Value sum = amx::TileMulFOp::create(b, loc, cTile, lhs, rhs, acc);
              amx::TileStoreOp::create(b, loc, cp, ValueRange{i, j}, sum);
              scf::YieldOp::create(b, loc);
            });
        scf::InParallelOp::create(b, loc);
      });
  if (cp != c)
    copyInto(b, loc, view(b, loc, cp, {0, 0}, {m, n}), c,
             b.getMultiDimIdentityMap(2));
  b.eraseOp(op);
  if (rounded)
    eraseRounded(b, *rounded);
}

constexpr int64_t kLanes = 16; // f32 lanes of a 512-bit vector

/// One product on AVX512-BF16 dot products (see emitDotBF16Products).
class DotProduct {
public:
  DotProduct(IRRewriter &b, linalg::MatmulOp op, Layout layout, DotTiles t,
             bool takeFill)
      : b(b), loc(op.getLoc()), t(t) {
    c = op.getDpsInits()[0];
    auto cType = llvm::cast<MemRefType>(c.getType());
    auto aType = llvm::cast<MemRefType>(op.getDpsInputs()[0].getType());
    m = cType.getDimSize(0), n = cType.getDimSize(1);
    k = aType.getDimSize(layout.transposedA ? 0 : 1);
    kPairs = (k + 1) / 2;
    // Whole register tiles in each output tile: only the last tile of a
    // row or column of tiles has a remainder (M mod MR, N mod NR).
    this->t.mr = std::min(t.mr, m);
    this->t.nr = std::min(t.nr, roundUp(n, kLanes));
    this->t.mt = roundUp(std::max(t.mt, this->t.mr), this->t.mr);
    this->t.nt = roundUp(std::max(t.nt, this->t.nr), this->t.nr);
    this->t.kt = std::clamp<int64_t>(t.kt, 1, kPairs);
    if (takeFill)
      takeAccumulatorInit(op);
    epilogue = op->getAttr(tgc::cpu::kEpilogueAttr);
    b.setInsertionPoint(op);
    pack(op, layout);
  }

  void emit() {
    SmallVector<OpFoldResult> lbs{b.getIndexAttr(0), b.getIndexAttr(0)};
    SmallVector<OpFoldResult> ubs{b.getIndexAttr(m), b.getIndexAttr(n)};
    SmallVector<OpFoldResult> steps{b.getIndexAttr(t.mt), b.getIndexAttr(t.nt)};
    scf::ForallOp::create(b, loc, lbs, ubs, steps, ValueRange{}, std::nullopt,
                          [&](OpBuilder &nested, Location, ValueRange ivs) {
                            OpBuilder::InsertionGuard guard(b);
                            b.setInsertionPointToStart(
                                nested.getInsertionBlock());
                            outputTile(ivs[0], ivs[1]);
                            if (epilogue)
                              markEpilogue(ivs[0], ivs[1]);
                            scf::InParallelOp::create(b, loc);
                          });
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t y) { return add(x, index(y)); }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, index(y));
  }
  Value min(Value x, int64_t y) {
    return arith::MinSIOp::create(b, loc, x, index(y));
  }
  /// The end of the whole steps of `step` from `from` towards `to` (where
  /// the remainder, if any, starts).
  Value wholeEnd(Value from, Value to, int64_t step) {
    Value span = arith::SubIOp::create(b, loc, to, from);
    Value whole = arith::DivUIOp::create(b, loc, span, index(step));
    return add(from, mul(whole, step));
  }
  void forLoop(Value from, Value to, int64_t step,
               llvm::function_ref<void(Value)> body) {
    scf::ForOp::create(b, loc, from, to, index(step), ValueRange{},
                       [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPointToStart(nested.getInsertionBlock());
                         body(iv);
                         scf::YieldOp::create(b, loc);
                       });
  }
  void ifLess(Value x, Value y, llvm::function_ref<void()> body) {
    Value less = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
    scf::IfOp::create(b, loc, less, [&](OpBuilder &nested, Location) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(nested.getInsertionBlock());
      body();
      scf::YieldOp::create(b, loc);
    });
  }

  /// The view of the output tile at (i0, j0), carrying the product's
  /// epilogue index: tgc-vectorize-matmuls runs the epilogue there, on the
  /// tile in cache, instead of as a pass over the whole output.
  void markEpilogue(Value i0, Value j0) {
    auto size = [&](Value at, int64_t step, int64_t extent) -> OpFoldResult {
      if (step >= extent || extent % step == 0)
        return b.getIndexAttr(std::min(step, extent));
      Value end = min(add(at, step), extent);
      return arith::SubIOp::create(b, loc, end, at).getResult();
    };
    auto tile = memref::SubViewOp::create(
        b, loc, c, ArrayRef<OpFoldResult>{i0, j0},
        ArrayRef<OpFoldResult>{size(i0, t.mt, m), size(j0, t.nt, n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    tile->setAttr(tgc::cpu::kEpilogueAttr, epilogue);
  }

  /// The fill of a constant that initialises C just before the product
  /// (tgc::findAccumulatorInit) becomes the register tiles' starting value
  /// in the first block of K pairs: C is then written once, not filled and
  /// read back (a [1024, 688] f32 fill is 2.75 MiB of stores per product).
  void takeAccumulatorInit(linalg::MatmulOp op) {
    linalg::FillOp fill = tgc::findAccumulatorInit(op);
    FloatAttr value;
    if (!fill || !matchPattern(fill.getInputs()[0], m_Constant(&value)))
      return;
    auto f32x16 = VectorType::get({kLanes}, b.getF32Type());
    b.setInsertionPoint(op);
    initial = arith::ConstantOp::create(
        b, loc, f32x16,
        DenseElementsAttr::get(f32x16,
                               static_cast<float>(value.getValueAsDouble())));
    b.eraseOp(fill);
  }

  /// A where its pairs along K are adjacent in memory (read as [M, K], K
  /// even, rows of unit stride); read as [K, M] (a weight gradient), packed
  /// as pairs along K like B (two rows interleaved: a transpose of 16-bit
  /// elements cost 7% of the tiny llama's step); else a [M][2 Kpairs] copy
  /// with a zero after an odd K. B as pairs along K (packPairsAlongK).
  void pack(linalg::MatmulOp op, Layout layout) {
    Value a = op.getDpsInputs()[0];
    auto aType = llvm::cast<MemRefType>(a.getType());
    ap = a;
    if (layout.transposedA) {
      aPairsAlongK = true;
      ap =
          packPairsAlongK(b, loc, a, /*transposed=*/false, k, m, 2 * kPairs, m);
    } else if (k % 2 || !hasUnitRows(aType)) {
      ap = memref::AllocOp::create(
          b, loc, MemRefType::get({m, 2 * kPairs}, b.getBF16Type()));
      zeroRegion(b, loc, ap, {0, k}, {m, 2 * kPairs - k});
      copyInto(b, loc, a, view(b, loc, ap, {0, 0}, {m, k}),
               b.getMultiDimIdentityMap(2));
    }
    // B (a weight's bf16 copy, mostly) packed from the f32 values it was
    // rounded from: one pass over them instead of two.
    Value bm = op.getDpsInputs()[1];
    roundedB = roundedOnlyFor(op, bm);
    bp = packPairsAlongK(b, loc, bm, layout.transposedB, k, n, 2 * kPairs,
                         roundUp(n, kLanes), roundedB);
  }

public:
  /// After the product is gone: the rounding loop that packing replaced.
  void eraseRoundedOperand() {
    if (roundedB)
      eraseRounded(b, *roundedB);
  }

private:
  /// Row `row`'s pair `pair` of A (two bf16 along K).
  Value pairOfA(Value row, Value pair) {
    auto pairType = VectorType::get({2}, b.getBF16Type());
    if (aPairsAlongK)
      return vector::LoadOp::create(b, loc, pairType, ap,
                                    ValueRange{pair, mul(row, 2)});
    return vector::LoadOp::create(b, loc, pairType, ap,
                                  ValueRange{row, mul(pair, 2)});
  }

  /// One MT x NT output tile at (i0, j0): per block of KT pairs, the whole
  /// register tiles column by column (a KT x NR slice of B stays in L1
  /// while the rows pass), then the remainders.
  void outputTile(Value i0, Value j0) {
    Value rowsEnd = min(add(i0, t.mt), m), colsEnd = min(add(j0, t.nt), n);
    Value rowsWhole = wholeEnd(i0, rowsEnd, t.mr);
    Value colsWhole = wholeEnd(j0, colsEnd, t.nr);
    int64_t rowRest = m % t.mr, colRest = n % t.nr;
    forLoop(index(0), index(kPairs), t.kt, [&](Value k0) {
      Value kEnd = min(add(k0, t.kt), kPairs);
      auto columnOfTiles = [&](Value j, int64_t columns) {
        forLoop(i0, rowsWhole, t.mr,
                [&](Value i) { registerTile(i, j, t.mr, columns, k0, kEnd); });
        if (rowRest)
          ifLess(rowsWhole, rowsEnd, [&] {
            registerTile(rowsWhole, j, rowRest, columns, k0, kEnd);
          });
      };
      forLoop(j0, colsWhole, t.nr, [&](Value j) { columnOfTiles(j, t.nr); });
      if (colRest)
        ifLess(colsWhole, colsEnd, [&] { columnOfTiles(colsWhole, colRest); });
    });
  }

  /// C[i : i + rows, j : j + columns] += the pairs [k0, kEnd) of A and B,
  /// with the tile in registers across the pairs: per pair, one broadcast
  /// of A's pair per row and one load of B per 16 columns.
  void registerTile(Value i, Value j, int64_t rows, int64_t columns, Value k0,
                    Value kEnd) {
    int64_t vectors = (columns + kLanes - 1) / kLanes;
    int64_t lastLanes = columns - (vectors - 1) * kLanes;
    auto f32x16 = VectorType::get({kLanes}, b.getF32Type());
    auto bf16x32 = VectorType::get({2 * kLanes}, b.getBF16Type());
    Value mask;
    if (lastLanes < kLanes)
      mask = vector::ConstantMaskOp::create(
          b, loc, VectorType::get({kLanes}, b.getI1Type()),
          ArrayRef<int64_t>{lastLanes});
    Value zero = arith::ConstantOp::create(
        b, loc, f32x16, DenseElementsAttr::get(f32x16, 0.0f));
    // C's rows and the first column of each vector.
    SmallVector<Value> rowOf, colOf;
    for (int64_t r = 0; r < rows; ++r)
      rowOf.push_back(add(i, r));
    for (int64_t v = 0; v < vectors; ++v)
      colOf.push_back(add(j, v * kLanes));
    auto loadC = [&] {
      SmallVector<Value> loaded;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t v = 0; v < vectors; ++v) {
          SmallVector<Value, 2> at{rowOf[r], colOf[v]};
          loaded.push_back(
              v + 1 == vectors && mask
                  ? vector::MaskedLoadOp::create(b, loc, f32x16, c, at, mask,
                                                 zero)
                        .getResult()
                  : vector::LoadOp::create(b, loc, f32x16, c, at).getResult());
        }
      return loaded;
    };
    SmallVector<Value> accumulators;
    if (!initial) {
      accumulators = loadC();
    } else {
      // The first block of K pairs starts from the fill's value.
      Value first =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, k0, index(0));
      SmallVector<Type> types(rows * vectors, f32x16);
      auto start = scf::IfOp::create(b, loc, types, first,
                                     /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(start.thenBlock());
        scf::YieldOp::create(b, loc,
                             SmallVector<Value>(rows * vectors, initial));
        b.setInsertionPointToStart(start.elseBlock());
        scf::YieldOp::create(b, loc, loadC());
      }
      accumulators.assign(start.getResults().begin(), start.getResults().end());
    }
    Value jPairs = mul(j, 2);
    auto loop = scf::ForOp::create(
        b, loc, k0, kEnd, index(1), accumulators,
        [&](OpBuilder &nested, Location, Value kk, ValueRange acc) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(nested.getInsertionBlock());
          SmallVector<Value> bs;
          for (int64_t v = 0; v < vectors; ++v)
            bs.push_back(vector::LoadOp::create(
                b, loc, bf16x32, bp,
                ValueRange{kk, add(jPairs, 2 * kLanes * v)}));
          SmallVector<Value> next;
          auto i32x1 = VectorType::get({1}, b.getI32Type());
          auto i32x16 = VectorType::get({kLanes}, b.getI32Type());
          for (int64_t r = 0; r < rows; ++r) {
            Value word =
                vector::BitCastOp::create(b, loc, i32x1, pairOfA(rowOf[r], kk));
            Value all = vector::BroadcastOp::create(b, loc, i32x16, word);
            Value as = vector::BitCastOp::create(b, loc, bf16x32, all);
            for (int64_t v = 0; v < vectors; ++v)
              next.push_back(x86vector::DotBF16Op::create(
                  b, loc, f32x16, acc[r * vectors + v], as, bs[v]));
          }
          scf::YieldOp::create(b, loc, next);
        });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v) {
        Value sum = loop.getResult(r * vectors + v);
        SmallVector<Value, 2> at{rowOf[r], colOf[v]};
        if (v + 1 == vectors && mask)
          vector::MaskedStoreOp::create(b, loc, c, at, mask, sum);
        else
          vector::StoreOp::create(b, loc, sum, c, at);
      }
  }

  IRRewriter &b;
  Location loc;
  DotTiles t;
  Value c, ap, bp;
  std::optional<RoundedOperand> roundedB; // B packed from its f32 source
  Value initial;      // C's starting value (a vector constant), if it is filled
  Attribute epilogue; // the index of the epilogue on C's tiles, if any
  bool aPairsAlongK = false; // ap is [K/2][2 M], else [M][>= K]
  int64_t m, n, k, kPairs;
};
} // namespace

bool tgc::cpu::isAMXProduct(Operation *op) {
  auto product = llvm::dyn_cast<linalg::MatmulOp>(op);
  return product && bf16ProductLayout(product);
}

bool tgc::cpu::isDotBF16Product(Operation *op) {
  auto product = llvm::dyn_cast<linalg::MatmulOp>(op);
  return product && bf16ProductLayout(product) &&
         hasUnitRows(
             llvm::cast<MemRefType>(product.getDpsInits()[0].getType()));
}

bool tgc::cpu::isEmittedProduct(Operation *op, bool amx, bool bf16Dot) {
  return amx ? isAMXProduct(op) : bf16Dot && isDotBF16Product(op);
}

void tgc::cpu::emitAMXProducts(ModuleOp module) {
  SmallVector<std::pair<linalg::MatmulOp, Layout>> products;
  module.walk([&](linalg::MatmulOp op) {
    if (std::optional<Layout> layout = bf16ProductLayout(op))
      products.push_back({op, *layout});
  });
  IRRewriter b(module.getContext());
  for (auto [op, layout] : products)
    emitAMXProduct(b, op, layout);
}

void tgc::cpu::emitDotBF16Products(
    ModuleOp module,
    llvm::function_ref<DotTiles(int64_t, int64_t, int64_t)> chooseTiles,
    bool takeFills) {
  SmallVector<std::pair<linalg::MatmulOp, Layout>> products;
  module.walk([&](linalg::MatmulOp op) {
    if (isDotBF16Product(op))
      products.push_back({op, *bf16ProductLayout(op)});
  });
  IRRewriter b(module.getContext());
  for (auto [op, layout] : products) {
    auto cType = llvm::cast<MemRefType>(op.getDpsInits()[0].getType());
    auto aType = llvm::cast<MemRefType>(op.getDpsInputs()[0].getType());
    int64_t k = aType.getDimSize(layout.transposedA ? 0 : 1);
    DotProduct product(
        b, op, layout,
        chooseTiles(cType.getDimSize(0), cType.getDimSize(1), (k + 1) / 2),
        takeFills);
    product.emit();
    b.eraseOp(op);
    product.eraseRoundedOperand();
  }
}
