//===- AMXProducts.cpp - bf16 matmuls on AMX tiles ------------------------===//
//
// tdpbf16ps multiplies a 16 x 32 bf16 tile of A by a 16 x 32 tile of B that
// holds 16 columns as pairs along K (16 K-pairs per tile row) and adds the
// 16 x 16 result to an f32 tile: 8192 multiply-adds per instruction. The
// operands are packed once per product, padded with zeros to whole tiles:
// A as [Mp][Kp], B as [Kp/2][2 Np] (pairs of one column adjacent), and the
// accumulator lives in a padded f32 copy of C, copied back at the end.
//
//===----------------------------------------------------------------------===//

#include "AMXProducts.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

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

/// dst[d...] = src[map(d...)] over all of `dst`.
void copyInto(OpBuilder &b, Location loc, Value src, Value dst, AffineMap map) {
  int64_t rank = llvm::cast<MemRefType>(dst.getType()).getRank();
  linalg::GenericOp::create(
      b, loc, ValueRange{src}, ValueRange{dst},
      ArrayRef<AffineMap>{map, b.getMultiDimIdentityMap(rank)},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, args[0]);
      });
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
      !c.hasStaticShape() || !a.getElementType().isBF16() ||
      !b.getElementType().isBF16() || !c.getElementType().isF32())
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

void emitProduct(IRRewriter &b, linalg::MatmulOp op, Layout layout) {
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
  AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
             d2 = getAffineDimExpr(2, ctx);

  // A: [Mp][Kp], zero padded.
  Value ap =
      tileBuffer(b, loc, MemRefType::get({mp, kp}, bf16), mp != m || kp != k);
  copyInto(b, loc, a, view(b, loc, ap, {0, 0}, {m, k}),
           layout.transposedA ? AffineMap::get(2, 0, {d1, d0}, ctx)
                              : b.getMultiDimIdentityMap(2));
  // B: [Kp/2][Np][2] with bp[k2, j, p] = B[2 k2 + p, j], viewed [Kp/2][2 Np].
  Value bp3 = tileBuffer(b, loc, MemRefType::get({kp / 2, np, 2}, bf16),
                         kp != k || np != n);
  auto bMap = [&](AffineExpr row, AffineExpr col) {
    return layout.transposedB ? AffineMap::get(3, 0, {col, row}, ctx)
                              : AffineMap::get(3, 0, {row, col}, ctx);
  };
  if (k / 2 > 0)
    copyInto(b, loc, bm, view(b, loc, bp3, {0, 0, 0}, {k / 2, n, 2}),
             bMap(d0 * 2 + d2, d1));
  if (k % 2)
    copyInto(b, loc, bm, view(b, loc, bp3, {k / 2, 0, 0}, {1, n, 1}),
             bMap(getAffineConstantExpr(k - 1, ctx), d1));
  Value bp = memref::CollapseShapeOp::create(
      b, loc, bp3, SmallVector<ReassociationIndices>{{0}, {1, 2}});
  // The accumulator: C itself where tiles fit it (whole tiles, rows of unit
  // stride), else a padded f32 copy.
  Value cp = c;
  int64_t offset;
  SmallVector<int64_t> strides;
  bool unitRows = succeeded(cType.getStridesAndOffset(strides, offset)) &&
                  strides.back() == 1;
  if (mp != m || np != n || !unitRows) {
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
}

} // namespace

void tgc::cpu::emitAMXProducts(ModuleOp module) {
  SmallVector<std::pair<linalg::MatmulOp, Layout>> products;
  module.walk([&](linalg::MatmulOp op) {
    if (std::optional<Layout> layout = bf16ProductLayout(op))
      products.push_back({op, *layout});
  });
  IRRewriter b(module.getContext());
  for (auto [op, layout] : products)
    emitProduct(b, op, layout);
}
