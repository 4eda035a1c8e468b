//===- VectorizeTransposes.cpp - f32 transposes in register blocks --------===//
//
// See the pass description: whole 16 x 16 blocks of a static f32 matrix
// read by rows, transposed in registers and written by rows, strips of
// sixteen source rows in parallel; the edges stay linalg.transpose.
//
//===----------------------------------------------------------------------===//

#include "BlockTranspose.h"
#include "tgc/Target/CPU/Passes.h"

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCVECTORIZETRANSPOSESPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {

using tgc::cpu::kTransposeBlock;

/// Whether `op` transposes a static f32 matrix with at least one whole
/// block.
bool isBlockTransposable(linalg::TransposeOp op) {
  auto type = llvm::dyn_cast<MemRefType>(op.getInput().getType());
  auto init = llvm::dyn_cast<MemRefType>(op.getInit().getType());
  return type && init && type.getRank() == 2 &&
         op.getPermutation() == ArrayRef<int64_t>{1, 0} &&
         type.getElementType().isF32() && type.hasStaticShape() &&
         init.hasStaticShape() && type.getDimSize(0) >= kTransposeBlock &&
         type.getDimSize(1) >= kTransposeBlock;
}

/// The transpose of `src[rows, cols]` into `dst[cols, rows]`, offsets and
/// sizes static, as a linalg.transpose of subviews.
void transposeEdge(OpBuilder &b, Location loc, Value src, Value dst,
                   int64_t row, int64_t rows, int64_t col, int64_t cols) {
  if (rows == 0 || cols == 0)
    return;
  auto view = [&](Value buffer, int64_t r, int64_t nr, int64_t c,
                  int64_t nc) -> Value {
    return memref::SubViewOp::create(b, loc, buffer, ArrayRef<int64_t>{r, c},
                                     ArrayRef<int64_t>{nr, nc},
                                     ArrayRef<int64_t>{1, 1});
  };
  linalg::TransposeOp::create(b, loc, view(src, row, rows, col, cols),
                              view(dst, col, cols, row, rows),
                              ArrayRef<int64_t>{1, 0});
}

void vectorize(linalg::TransposeOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value src = op.getInput(), dst = op.getInit();
  auto type = llvm::cast<MemRefType>(src.getType());
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  int64_t wholeRows = rows / kTransposeBlock * kTransposeBlock,
          wholeCols = cols / kTransposeBlock * kTransposeBlock;
  tgc::cpu::transposeWholeBlocks(b, loc, src, dst, wholeRows, wholeCols,
                                 /*pairs=*/false);
  // The edges: the columns past the last whole block (of the whole rows),
  // then the rows past it (all columns).
  transposeEdge(b, loc, src, dst, 0, wholeRows, wholeCols, cols - wholeCols);
  transposeEdge(b, loc, src, dst, wholeRows, rows - wholeRows, 0, cols);
  op.erase();
}

struct TGCVectorizeTransposesPass
    : tgc::cpu::impl::TGCVectorizeTransposesPassBase<
          TGCVectorizeTransposesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::TransposeOp> work;
    getOperation().walk([&](linalg::TransposeOp op) {
      if (op.hasPureBufferSemantics() && isBlockTransposable(op))
        work.push_back(op);
    });
    for (linalg::TransposeOp op : work)
      vectorize(op);
  }
};

} // namespace
