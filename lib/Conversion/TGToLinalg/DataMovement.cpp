//===- DataMovement.cpp - tg structure ops, lookups, caches → linalg/tensor ===//

#include "Utils.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;

namespace {

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, llvm::cast<TypedAttr>(op.getValue()));
    return success();
  }
};

/// Each row (b, s) inserted at (b, positions[b, s]) of the cache, in a loop
/// over the rows threading the cache: bufferized with the cache as a
/// writable argument, the rows are written in place.
struct CacheUpdateLowering : OpConversionPattern<CacheUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CacheUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType rowsType = op.getRows().getType();
    int64_t B = rowsType.getDimSize(0), S = rowsType.getDimSize(1),
            H = rowsType.getDimSize(2), D = rowsType.getDimSize(3),
            L = op.getCache().getType().getDimSize(1);
    Value rows = adaptor.getRows(), positions = adaptor.getPositions();
    auto index = [&](OpBuilder &b, int64_t v) -> OpFoldResult {
      return b.getIndexAttr(v);
    };
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value count = arith::ConstantIndexOp::create(rewriter, loc, B * S);
    auto rowType = RankedTensorType::get({1, 1, H, D},
                                         rowsType.getElementType());
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, count, one, ValueRange{adaptor.getCache()},
        [&](OpBuilder &b, Location l, Value flat, ValueRange carried) {
          Value sCount = arith::ConstantIndexOp::create(b, l, S);
          Value bIdx = arith::DivUIOp::create(b, l, flat, sCount);
          Value sIdx = arith::RemUIOp::create(b, l, flat, sCount);
          Value at = clampIndex(
              b, l,
              tensor::ExtractOp::create(b, l, positions,
                                        ValueRange{bIdx, sIdx}),
              L);
          SmallVector<OpFoldResult> sizes{index(b, 1), index(b, 1),
                                          index(b, H), index(b, D)};
          SmallVector<OpFoldResult> strides(4, index(b, 1));
          Value row = tensor::ExtractSliceOp::create(
              b, l, rowType, rows,
              SmallVector<OpFoldResult>{bIdx, sIdx, index(b, 0), index(b, 0)},
              sizes, strides);
          Value updated = tensor::InsertSliceOp::create(
              b, l, row, carried[0],
              SmallVector<OpFoldResult>{bIdx, at, index(b, 0), index(b, 0)},
              sizes, strides);
          scf::YieldOp::create(b, l, updated);
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, reshape(rewriter, op.getLoc(), adaptor.getInput(), op.getType()));
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    Value init = tensor::EmptyOp::create(rewriter, op.getLoc(), type.getShape(),
                                         type.getElementType());
    auto t = linalg::TransposeOp::create(
        rewriter, op.getLoc(), adaptor.getInput(), init, op.getPermutation());
    rewriter.replaceOp(op, t.getResult());
    return success();
  }
};

struct BroadcastLowering : OpConversionPattern<BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op,
        elementwise(rewriter, op.getLoc(), op.getType(), adaptor.getInput(),
                    [](OpBuilder &, Location, ValueRange a) { return a[0]; }));
    return success();
  }
};

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType in = op.getInput().getType();
    SmallVector<OpFoldResult> offsets(in.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes,
        strides(in.getRank(), rewriter.getIndexAttr(1));
    for (int64_t d : op.getType().getShape())
      sizes.push_back(rewriter.getIndexAttr(d));
    offsets[op.getAxis()] = rewriter.getIndexAttr(op.getStart());
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, op.getType(), adaptor.getInput(), offsets, sizes, strides);
    return success();
  }
};

struct PadLowering : OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType in = op.getInput().getType();
    Value zeros = filled(rewriter, op.getLoc(), op.getType(), 0.0);
    SmallVector<OpFoldResult> offsets(in.getRank(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes,
        strides(in.getRank(), rewriter.getIndexAttr(1));
    for (int64_t d : in.getShape())
      sizes.push_back(rewriter.getIndexAttr(d));
    offsets[op.getAxis()] = rewriter.getIndexAttr(op.getLow());
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        op, adaptor.getInput(), zeros, offsets, sizes, strides);
    return success();
  }
};

struct EmbeddingLowering : OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // A gather: out[p..., d] = table[clamp(ids[p...]), d].
    Location loc = op.getLoc();
    RankedTensorType out = op.getType();
    int64_t rank = out.getRank();
    int64_t rows = op.getTable().getType().getDimSize(0);
    Value table = adaptor.getTable();
    SmallVector<int64_t> idDims;
    for (int64_t i = 0; i + 1 < rank; ++i)
      idDims.push_back(i);
    Value init = tensor::EmptyOp::create(rewriter, loc, out.getShape(),
                                         out.getElementType());
    Value result = generic(
        rewriter, loc, adaptor.getIndices(),
        dimsMap(getContext(), rank, idDims), init,
        AffineMap::getMultiDimIdentityMap(rank, getContext()), iterators(rank),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value row = clampIndex(b, l, args[0], rows);
          Value col = linalg::IndexOp::create(b, l, rank - 1);
          return tensor::ExtractOp::create(b, l, table, ValueRange{row, col});
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct EmbeddingGradLowering : OpConversionPattern<EmbeddingGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // A scatter-add, sequential over positions (ids may repeat): for each
    // position p, row clamp(ids[p]) of the result += grad[p, :].
    Location loc = op.getLoc();
    RankedTensorType out = op.getType();
    int64_t rows = out.getDimSize(0), dim = out.getDimSize(1);
    int64_t positions = op.getIndices().getType().getNumElements();
    auto idsFlatType = RankedTensorType::get(
        {positions}, op.getIndices().getType().getElementType());
    Value ids = reshape(rewriter, loc, adaptor.getIndices(), idsFlatType);
    Value grad =
        reshape(rewriter, loc, adaptor.getGrad(),
                RankedTensorType::get({positions, dim}, out.getElementType()));
    Value zeros = filled(rewriter, loc, out, 0.0);
    Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value ub = arith::ConstantIndexOp::create(rewriter, loc, positions);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto rowType = RankedTensorType::get({1, dim}, out.getElementType());
    auto loop = scf::ForOp::create(
        rewriter, loc, lb, ub, one, ValueRange{zeros},
        [&](OpBuilder &b, Location l, Value p, ValueRange acc) {
          Value id = tensor::ExtractOp::create(b, l, ids, p);
          Value row = clampIndex(b, l, id, rows);
          SmallVector<OpFoldResult> sizes{b.getIndexAttr(1),
                                          b.getIndexAttr(dim)};
          SmallVector<OpFoldResult> strides{b.getIndexAttr(1),
                                            b.getIndexAttr(1)};
          SmallVector<OpFoldResult> accOffsets{row, b.getIndexAttr(0)};
          SmallVector<OpFoldResult> gradOffsets{p, b.getIndexAttr(0)};
          Value current = tensor::ExtractSliceOp::create(
              b, l, rowType, acc[0], accOffsets, sizes, strides);
          Value g = tensor::ExtractSliceOp::create(b, l, rowType, grad,
                                                   gradOffsets, sizes, strides);
          // The row is the loop's destination: updated in place, not read
          // into a copy first.
          AffineMap identity =
              AffineMap::getMultiDimIdentityMap(2, b.getContext());
          Value sum =
              generic(b, l, g, identity, current, identity, iterators(2),
                      [](OpBuilder &nb, Location nl, ValueRange a) {
                        return addF(nb, nl, a[1], a[0]);
                      });
          Value next = tensor::InsertSliceOp::create(
              b, l, sum, acc[0], accOffsets, sizes, strides);
          scf::YieldOp::create(b, l, next);
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

} // namespace

void mlir::tg::populateTGDataMovementToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ConstantLowering, ReshapeLowering, TransposeLowering,
               BroadcastLowering, SliceLowering, PadLowering, EmbeddingLowering,
               EmbeddingGradLowering, CacheUpdateLowering>(patterns.getContext());
}
