//===- Matmul.cpp - tg.matmul and tg.linear → linalg contractions ---------===//

#include "Utils.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;

namespace {

Value multiplyAccumulate(OpBuilder &b, Location l, ValueRange args) {
  Type acc = args[2].getType();
  return addF(
      b, l, args[2],
      mulF(b, l, castFloat(b, l, args[0], acc), castFloat(b, l, args[1], acc)));
}

struct MatmulLowering : OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType out = op.getType();
    Location loc = op.getLoc();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    Type operand = tensorType(lhs).getElementType();
    Type acc = accumulationType(operand);
    int64_t lhsRank = tensorType(lhs).getRank(),
            rhsRank = tensorType(rhs).getRank();
    // Matrix products, and batched inputs times one shared matrix (rows of
    // the batch folded together), become a 2-D linalg.matmul.
    if (rhsRank == 2 && (lhsRank == 2 || !op.getTransposeLhs())) {
      int64_t k = tensorType(rhs).getDimSize(op.getTransposeRhs() ? 1 : 0);
      int64_t n = out.getShape().back();
      int64_t rows = out.getNumElements() / n;
      Value a = lhsRank == 2
                    ? lhs
                    : reshape(rewriter, loc, lhs,
                              RankedTensorType::get({rows, k}, operand));
      Value bm = op.getTransposeRhs() ? transpose2D(rewriter, loc, rhs) : rhs;
      Value init =
          filled(rewriter, loc, RankedTensorType::get({rows, n}, acc), 0.0);
      Value product = op.getTransposeLhs()
                          ? matmulTransposedLhs(rewriter, loc, a, bm, init)
                          : matmul2D(rewriter, loc, a, bm, init);
      product = castElements(rewriter, loc, product, out.getElementType());
      rewriter.replaceOp(op, reshape(rewriter, loc, product, out));
      return success();
    }
    // Otherwise a generic contraction over loops (batch..., m, n, k).
    int64_t nb = out.getRank() - 2, rank = nb + 3;
    int64_t m = nb, n = nb + 1, k = nb + 2;
    auto operandMap = [&](Value v, bool transposed, int64_t row, int64_t col) {
      SmallVector<int64_t> dims;
      if (tensorType(v).getRank() > 2)
        for (int64_t i = 0; i < nb; ++i)
          dims.push_back(i);
      dims.push_back(transposed ? col : row);
      dims.push_back(transposed ? row : col);
      return dimsMap(getContext(), rank, dims);
    };
    SmallVector<int64_t> outDims;
    for (int64_t i = 0; i < nb + 2; ++i)
      outDims.push_back(i);
    Value init = filled(rewriter, op.getLoc(), out.clone(acc), 0.0);
    Value result =
        generic(rewriter, op.getLoc(), {adaptor.getLhs(), adaptor.getRhs()},
                {operandMap(adaptor.getLhs(), op.getTransposeLhs(), m, k),
                 operandMap(adaptor.getRhs(), op.getTransposeRhs(), k, n)},
                init, dimsMap(getContext(), rank, outDims),
                iterators(rank, {k}), multiplyAccumulate);
    rewriter.replaceOp(op, castElements(rewriter, loc, result, out.getElementType()));
    return success();
  }
};

struct LinearLowering : OpConversionPattern<LinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Rows flattened to one dimension: y[r, o] = Σ_k x[r, k] W[o, k] (+ b[o]).
    Location loc = op.getLoc();
    RankedTensorType out = op.getType();
    int64_t in = op.getWeight().getType().getDimSize(1);
    int64_t outDim = out.getShape().back();
    int64_t rows = out.getNumElements() / outDim;
    Type operand = op.getInput().getType().getElementType();
    Type acc = accumulationType(operand);
    Value x = reshape(rewriter, loc, adaptor.getInput(),
                      RankedTensorType::get({rows, in}, operand));
    auto flatType = RankedTensorType::get({rows, outDim}, acc);
    Value init = adaptor.getBias()
                     ? elementwise(rewriter, loc, flatType, adaptor.getBias(),
                                   [&](OpBuilder &b, Location l, ValueRange a) {
                                     return castFloat(b, l, a[0], acc);
                                   })
                     : filled(rewriter, loc, flatType, 0.0);
    Value y = matmul2D(rewriter, loc, x,
                       transpose2D(rewriter, loc, adaptor.getWeight()), init);
    y = castElements(rewriter, loc, y, out.getElementType());
    rewriter.replaceOp(op, reshape(rewriter, loc, y, out));
    return success();
  }
};

} // namespace

void mlir::tg::populateTGMatmulToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulLowering, LinearLowering>(patterns.getContext());
}
