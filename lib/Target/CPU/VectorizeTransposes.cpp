//===- VectorizeTransposes.cpp - f32 transposes in register blocks --------===//
//
// See the pass description: whole 16 x 16 blocks of a static f32 matrix
// (or a bf16/f16 one widened to f32) read by rows, transposed in registers
// and written by rows, strips of sixteen source rows in parallel; the edges
// stay the op on subviews.
//
//===----------------------------------------------------------------------===//

#include "BlockTranspose.h"
#include "tgc/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCVECTORIZETRANSPOSESPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {

using tgc::cpu::BlockElements;
using tgc::cpu::kTransposeBlock;

/// A static matrix `src` [R, C] written transposed into `dst` [C, R] by
/// `op`, with at least one whole block: an f32 linalg.transpose, or the
/// linalg.generic that widens a bf16/f16 matrix into an f32 one while
/// transposing it (`dst[i, j] = extf(src[j, i])`, tgc-vectorize-matmuls'
/// widening of a transposed narrow weight).
struct BlockTransposable {
  Value src, dst;
  BlockElements elements;
};

std::optional<BlockTransposable> blockTransposable(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 1 ||
      op.getNumDpsInits() != 1)
    return std::nullopt;
  Value src = op.getDpsInputOperand(0)->get(),
        dst = op.getDpsInitOperand(0)->get();
  auto type = llvm::dyn_cast<MemRefType>(src.getType());
  auto init = llvm::dyn_cast<MemRefType>(dst.getType());
  if (!type || !init || type.getRank() != 2 || !type.hasStaticShape() ||
      !init.hasStaticShape() || type.getDimSize(0) < kTransposeBlock ||
      type.getDimSize(1) < kTransposeBlock)
    return std::nullopt;
  if (auto transpose = llvm::dyn_cast<linalg::TransposeOp>(*op)) {
    if (transpose.getPermutation() != ArrayRef<int64_t>{1, 0} ||
        !type.getElementType().isF32())
      return std::nullopt;
    return BlockTransposable{src, dst, BlockElements::F32};
  }
  auto generic = llvm::dyn_cast<linalg::GenericOp>(*op);
  if (!generic || generic.getNumParallelLoops() != 2 ||
      !llvm::isa<BFloat16Type, Float16Type>(type.getElementType()) ||
      !init.getElementType().isF32())
    return std::nullopt;
  MLIRContext *ctx = op.getContext();
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (maps[0] != AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, ctx) ||
      !maps[1].isIdentity())
    return std::nullopt;
  Block &body = generic.getRegion().front();
  auto extf = llvm::dyn_cast<arith::ExtFOp>(body.front());
  if (body.getOperations().size() != 2 || !extf ||
      extf.getIn() != body.getArgument(0) ||
      body.getTerminator()->getOperand(0) != extf.getResult())
    return std::nullopt;
  return BlockTransposable{src, dst, BlockElements::Widened};
}

/// `op` on the static rectangle `src[row.., col..]` (`rows` x `cols`) and
/// its transposed place in `dst`.
void transposeEdge(OpBuilder &b, linalg::LinalgOp op, Value src, Value dst,
                   int64_t row, int64_t rows, int64_t col, int64_t cols) {
  if (rows == 0 || cols == 0)
    return;
  Location loc = op.getLoc();
  auto view = [&](Value buffer, int64_t r, int64_t nr, int64_t c,
                  int64_t nc) -> Value {
    return memref::SubViewOp::create(b, loc, buffer, ArrayRef<int64_t>{r, c},
                                     ArrayRef<int64_t>{nr, nc},
                                     ArrayRef<int64_t>{1, 1});
  };
  IRMapping map;
  map.map(src, view(src, row, rows, col, cols));
  map.map(dst, view(dst, col, cols, row, rows));
  b.clone(*op, map);
}

void vectorize(linalg::LinalgOp op, const BlockTransposable &t) {
  OpBuilder b(op);
  auto type = llvm::cast<MemRefType>(t.src.getType());
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  int64_t wholeRows = rows / kTransposeBlock * kTransposeBlock,
          wholeCols = cols / kTransposeBlock * kTransposeBlock;
  tgc::cpu::transposeWholeBlocks(b, op.getLoc(), t.src, t.dst, wholeRows,
                                 wholeCols, t.elements);
  // The edges: the columns past the last whole block (of the whole rows),
  // then the rows past it (all columns).
  transposeEdge(b, op, t.src, t.dst, 0, wholeRows, wholeCols, cols - wholeCols);
  transposeEdge(b, op, t.src, t.dst, wholeRows, rows - wholeRows, 0, cols);
  op->erase();
}

struct TGCVectorizeTransposesPass
    : tgc::cpu::impl::TGCVectorizeTransposesPassBase<
          TGCVectorizeTransposesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, BlockTransposable>> work;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (std::optional<BlockTransposable> t = blockTransposable(op))
        work.emplace_back(op, *t);
    });
    for (auto &[op, t] : work)
      vectorize(op, t);
  }
};

} // namespace
