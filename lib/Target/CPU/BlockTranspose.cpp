//===- BlockTranspose.cpp - matrices transposed in register blocks --------===//

#include "BlockTranspose.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

void tgc::cpu::transposeWholeBlocks(OpBuilder &b, Location loc, Value src,
                                    Value dst, int64_t rows, int64_t cols,
                                    BlockElements elements) {
  constexpr int64_t n = kTransposeBlock;
  if (rows < n || cols < n)
    return;
  OpBuilder::InsertionGuard guard(b);
  bool pairs = elements == BlockElements::Pairs;
  Type element = llvm::cast<MemRefType>(src.getType()).getElementType();
  int64_t perWord = pairs ? 2 : 1;
  auto blockType = VectorType::get({n, n * perWord}, element);
  auto wordsType = VectorType::get({n, n}, b.getF32Type());
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  auto strips = scf::ForallOp::create(
      b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(rows / n)}, ValueRange{},
      std::nullopt);
  b.setInsertionPointToStart(strips.getBody());
  Value row = arith::MulIOp::create(b, loc, strips.getInductionVar(0),
                                    index(n));
  auto columns = scf::ForOp::create(b, loc, index(0), index(cols), index(n));
  b.setInsertionPointToStart(columns.getBody());
  Value col = columns.getInductionVar();
  // Element offsets of the block in src and dst (a word is `perWord` of
  // them along the rows).
  Value srcCol = col, dstCol = row;
  if (pairs) {
    srcCol = arith::MulIOp::create(b, loc, col, index(2));
    dstCol = arith::MulIOp::create(b, loc, row, index(2));
  }
  SmallVector<bool> inBounds{true, true};
  Value block = vector::TransferReadOp::create(
      b, loc, blockType, src, ValueRange{row, srcCol}, pad, inBounds);
  if (pairs)
    block = vector::BitCastOp::create(b, loc, wordsType, block);
  if (elements == BlockElements::Widened)
    block = arith::ExtFOp::create(b, loc, wordsType, block);
  auto transposed =
      vector::TransposeOp::create(b, loc, block, ArrayRef<int64_t>{1, 0});
  Value result = transposed;
  if (pairs)
    result = vector::BitCastOp::create(b, loc, blockType, result);
  vector::TransferWriteOp::create(b, loc, result, dst, ValueRange{col, dstCol},
                                  inBounds);
  // Unpacks and shuffles within sixteen registers, not an element at a
  // time (the conversion to LLVM's default).
  RewritePatternSet patterns(b.getContext());
  vector::populateVectorTransposeLoweringPatterns(
      patterns, vector::VectorTransposeLowering::Shuffle16x16);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  (void)applyOpPatternsGreedily(ArrayRef<Operation *>{transposed},
                                std::move(patterns), config);
}
