//===- VectorizeTransposes.cpp - f32 transposes in register blocks --------===//
//
// See the pass description: whole 16 x 16 blocks of a static f32 matrix
// read by rows, transposed in registers and written by rows, strips of
// sixteen source rows in parallel; the edges stay linalg.transpose.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CPU/Passes.h"

#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorTransforms.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCVECTORIZETRANSPOSESPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {

/// The side of a register block: sixteen f32 rows of one cache line each
/// (the shuffle lowering's shape).
constexpr int64_t kBlock = 16;

/// Whether `op` transposes a static f32 matrix with at least one whole
/// block.
bool isBlockTransposable(linalg::TransposeOp op) {
  auto type = llvm::dyn_cast<MemRefType>(op.getInput().getType());
  auto init = llvm::dyn_cast<MemRefType>(op.getInit().getType());
  return type && init && type.getRank() == 2 &&
         op.getPermutation() == ArrayRef<int64_t>{1, 0} &&
         type.getElementType().isF32() && type.hasStaticShape() &&
         init.hasStaticShape() && type.getDimSize(0) >= kBlock &&
         type.getDimSize(1) >= kBlock;
}

/// The transpose of `src[rows, cols]` into `dst[cols, rows]`, offsets and
/// sizes static, as a linalg.transpose of subviews.
void transposeEdge(OpBuilder &b, Location loc, Value src, Value dst,
                   int64_t row, int64_t rows, int64_t col, int64_t cols) {
  if (rows == 0 || cols == 0)
    return;
  auto view = [&](Value buffer, int64_t r, int64_t nr, int64_t c,
                  int64_t nc) -> Value {
    return memref::SubViewOp::create(
        b, loc, buffer,
        ArrayRef<OpFoldResult>{b.getIndexAttr(r), b.getIndexAttr(c)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(nr), b.getIndexAttr(nc)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  };
  linalg::TransposeOp::create(b, loc, view(src, row, rows, col, cols),
                              view(dst, col, cols, row, rows),
                              ArrayRef<int64_t>{1, 0});
}

/// Rewrites `op`; returns the vector.transpose ops made.
void vectorize(linalg::TransposeOp op,
               SmallVectorImpl<Operation *> &transposes) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value src = op.getInput(), dst = op.getInit();
  auto type = llvm::cast<MemRefType>(src.getType());
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  int64_t wholeRows = rows / kBlock * kBlock,
          wholeCols = cols / kBlock * kBlock;
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto blockType = VectorType::get({kBlock, kBlock}, type.getElementType());
  Value pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  // One strip of sixteen source rows per parallel iteration.
  auto strips = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(wholeRows / kBlock)},
      ValueRange{}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(strips.getBody());
    Value row = arith::MulIOp::create(b, loc, strips.getInductionVar(0),
                                      index(kBlock));
    auto columns =
        scf::ForOp::create(b, loc, index(0), index(wholeCols), index(kBlock));
    b.setInsertionPointToStart(columns.getBody());
    Value col = columns.getInductionVar();
    SmallVector<bool> inBounds{true, true};
    Value block = vector::TransferReadOp::create(
        b, loc, blockType, src, ValueRange{row, col}, pad, inBounds);
    auto transposed = vector::TransposeOp::create(b, loc, block,
                                                  ArrayRef<int64_t>{1, 0});
    transposes.push_back(transposed);
    vector::TransferWriteOp::create(b, loc, transposed, dst,
                                    ValueRange{col, row}, inBounds);
  }
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
    if (work.empty())
      return;
    SmallVector<Operation *> transposes;
    for (linalg::TransposeOp op : work)
      vectorize(op, transposes);
    // Unpacks and shuffles within sixteen registers, not an element at a
    // time.
    RewritePatternSet patterns(&getContext());
    vector::populateVectorTransposeLoweringPatterns(
        patterns, vector::VectorTransposeLowering::Shuffle16x16);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(transposes, std::move(patterns),
                                       config)))
      return signalPassFailure();
  }
};

} // namespace
