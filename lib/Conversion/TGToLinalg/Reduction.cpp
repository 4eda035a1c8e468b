//===- Reduction.cpp - sums, softmax, norms and the loss → linalg ---------===//
//
// Every op here is built from two generic shapes: a reduction over one axis,
// and a "rowwise" elementwise op that reads per-row statistics (the reduced
// tensors) and per-column vectors (norm weights) alongside full tensors.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;

namespace {

/// Sums `f(elements...)` of full-shaped inputs over every dimension but the
/// last: the weight/bias gradients of norms.
Value reduceRows(OpBuilder &b, Location loc, ValueRange full, ValueRange rows,
                 BodyFn f) {
  RankedTensorType type = tensorType(full[0]);
  int64_t rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  collectOperands(ctx, rank, rank - 1, full, rows, {}, inputs, maps);
  SmallVector<int64_t> reductions = allDimsBut(rank, rank - 1);
  Value init = filled(
      b, loc,
      RankedTensorType::get({type.getShape().back()}, type.getElementType()),
      0.0);
  return generic(b, loc, inputs, maps, init, dimsMap(ctx, rank, {rank - 1}),
                 iterators(rank, reductions),
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   return addF(nb, nl, args.back(),
                               f(nb, nl, args.drop_back()));
                 });
}

Value square(OpBuilder &b, Location l, ValueRange a) {
  return mulF(b, l, a[0], a[0]);
}

/// rsqrt(sumsq / d + eps) of a row.
Value inverseRms(OpBuilder &b, Location l, Value sum, int64_t d, double eps) {
  Value meanSq = divF(b, l, sum, cst(b, l, sum, static_cast<double>(d)));
  return math::RsqrtOp::create(b, l, addF(b, l, meanSq, cst(b, l, sum, eps)));
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

//===----------------------------------------------------------------------===//
// Sums and softmax
//===----------------------------------------------------------------------===//

struct ReduceSumLowering : OpConversionPattern<ReduceSumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceSumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType in = op.getInput().getType();
    int64_t rank = in.getRank();
    SmallVector<int64_t> kept, shape;
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(op.getDims(), d)) {
        kept.push_back(d);
        shape.push_back(in.getDimSize(d));
      }
    Location loc = op.getLoc();
    Value init = filled(rewriter, loc, in.clone(shape), 0.0);
    Value sum = generic(rewriter, loc, adaptor.getInput(),
                        AffineMap::getMultiDimIdentityMap(rank, getContext()),
                        init, dimsMap(getContext(), rank, kept),
                        iterators(rank, op.getDims()), sumOf(first));
    rewriter.replaceOp(op, reshape(rewriter, loc, sum, op.getType()));
    return success();
  }
};

struct SoftmaxLowering : OpConversionPattern<SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t axis = normalizeAxis(op.getAxis(), op.getType().getRank());
    rewriter.replaceOp(
        op, softmax(rewriter, op.getLoc(), adaptor.getInput(), axis));
    return success();
  }
};

struct SoftmaxGradLowering : OpConversionPattern<SoftmaxGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SoftmaxGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t axis = normalizeAxis(op.getAxis(), op.getType().getRank());
    Value g = adaptor.getGrad(), y = adaptor.getOutput();
    Value dot = reduceAxis(rewriter, loc, {g, y}, axis, 0.0,
                           sumOf([](OpBuilder &b, Location l, ValueRange a) {
                             return mulF(b, l, a[0], a[1]);
                           }));
    rewriter.replaceOp(
        op, rowwise(rewriter, loc, op.getType(), axis, {g, y}, dot, {},
                    [](OpBuilder &b, Location l, ValueRange a) {
                      return mulF(b, l, a[1], subF(b, l, a[0], a[2]));
                    }));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

struct RMSNormLowering : OpConversionPattern<RMSNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RMSNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t last = type.getRank() - 1, d = type.getShape().back();
    double eps = op.getEps().convertToDouble();
    Value x = adaptor.getInput();
    Value ss = reduceAxis(rewriter, loc, x, last, 0.0, sumOf(square));
    rewriter.replaceOp(
        op, rowwise(rewriter, loc, type, last, x, ss, adaptor.getWeight(),
                    [&](OpBuilder &b, Location l, ValueRange a) {
                      Value r = inverseRms(b, l, a[1], d, eps);
                      return mulF(b, l, mulF(b, l, a[0], r), a[2]);
                    }));
    return success();
  }
};

struct RMSNormGradLowering : OpConversionPattern<RMSNormGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RMSNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // r = rsqrt(mean(x²)+eps), n = x·r:
    // dx = r·(g·w − n·mean(g·w·n)), dw = Σ_rows g·n.
    Location loc = op.getLoc();
    RankedTensorType type = op.getInput().getType();
    int64_t last = type.getRank() - 1, d = type.getShape().back();
    double eps = op.getEps().convertToDouble();
    Value g = adaptor.getGrad(), x = adaptor.getInput(),
          w = adaptor.getWeight();
    Value ss = reduceAxis(rewriter, loc, x, last, 0.0, sumOf(square));
    // Σ g·w·x per row (a rowwise product first, then its sum).
    Value gwx = rowwise(rewriter, loc, type, last, {g, x}, {}, w,
                        [](OpBuilder &b, Location l, ValueRange a) {
                          return mulF(b, l, mulF(b, l, a[0], a[2]), a[1]);
                        });
    Value dot = reduceAxis(rewriter, loc, gwx, last, 0.0, sumOf(first));
    Value dx =
        rowwise(rewriter, loc, type, last, {g, x}, {ss, dot}, w,
                [&](OpBuilder &b, Location l, ValueRange a) {
                  Value r = inverseRms(b, l, a[2], d, eps);
                  Value n = mulF(b, l, a[1], r);
                  // mean(g·w·n) = r · Σ g·w·x / d
                  Value meanGWN =
                      divF(b, l, mulF(b, l, a[3], r), cst(b, l, r, d));
                  Value gw = mulF(b, l, a[0], a[4]);
                  return mulF(b, l, r, subF(b, l, gw, mulF(b, l, n, meanGWN)));
                });
    Value dw = reduceRows(
        rewriter, loc, {g, x}, ss, [&](OpBuilder &b, Location l, ValueRange a) {
          return mulF(b, l, a[0],
                      mulF(b, l, a[1], inverseRms(b, l, a[2], d, eps)));
        });
    rewriter.replaceOp(op, {dx, dw});
    return success();
  }
};

/// Mean and inverse standard deviation per row (biased variance).
std::pair<Value, Value> rowMoments(OpBuilder &b, Location loc, Value x,
                                   double eps) {
  RankedTensorType type = tensorType(x);
  int64_t last = type.getRank() - 1, d = type.getShape().back();
  Value sum = reduceAxis(b, loc, x, last, 0.0, sumOf(first));
  auto rowType = tensorType(sum);
  Value mean = elementwise(b, loc, rowType, sum,
                           [&](OpBuilder &nb, Location nl, ValueRange a) {
                             return divF(nb, nl, a[0], cst(nb, nl, a[0], d));
                           });
  Value centered = rowwise(b, loc, type, last, x, mean, {},
                           [](OpBuilder &nb, Location nl, ValueRange a) {
                             Value c = subF(nb, nl, a[0], a[1]);
                             return mulF(nb, nl, c, c);
                           });
  Value var = reduceAxis(b, loc, centered, last, 0.0, sumOf(first));
  Value inv =
      elementwise(b, loc, rowType, var,
                  [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                    return inverseRms(nb, nl, a[0], d, eps);
                  });
  return {mean, inv};
}

struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t last = type.getRank() - 1;
    auto [mean, inv] = rowMoments(rewriter, loc, adaptor.getInput(),
                                  op.getEps().convertToDouble());
    SmallVector<Value> columns{adaptor.getWeight()};
    if (adaptor.getBias())
      columns.push_back(adaptor.getBias());
    bool hasBias = static_cast<bool>(adaptor.getBias());
    rewriter.replaceOp(
        op, rowwise(rewriter, loc, type, last, adaptor.getInput(), {mean, inv},
                    columns, [&](OpBuilder &b, Location l, ValueRange a) {
                      Value n = mulF(b, l, subF(b, l, a[0], a[1]), a[2]);
                      Value y = mulF(b, l, n, a[3]);
                      return hasBias ? addF(b, l, y, a[4]) : y;
                    }));
    return success();
  }
};

struct LayerNormGradLowering : OpConversionPattern<LayerNormGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // n = (x − mean)·r, gw = g·w:
    // dx = r·(gw − mean(gw) − n·mean(gw·n)), dw = Σ g·n, db = Σ g.
    Location loc = op.getLoc();
    RankedTensorType type = op.getInput().getType();
    int64_t last = type.getRank() - 1, d = type.getShape().back();
    Value g = adaptor.getGrad(), x = adaptor.getInput(),
          w = adaptor.getWeight();
    auto [mean, inv] =
        rowMoments(rewriter, loc, x, op.getEps().convertToDouble());
    Value gw = rowwise(rewriter, loc, type, last, g, {}, w,
                       [](OpBuilder &b, Location l, ValueRange a) {
                         return mulF(b, l, a[0], a[1]);
                       });
    Value gwn = rowwise(rewriter, loc, type, last, {gw, x}, {mean, inv}, {},
                        [](OpBuilder &b, Location l, ValueRange a) {
                          return mulF(b, l, a[0],
                                      mulF(b, l, subF(b, l, a[1], a[2]), a[3]));
                        });
    Value sumGW = reduceAxis(rewriter, loc, gw, last, 0.0, sumOf(first));
    Value sumGWN = reduceAxis(rewriter, loc, gwn, last, 0.0, sumOf(first));
    Value dx =
        rowwise(rewriter, loc, type, last, {gw, x}, {mean, inv, sumGW, sumGWN},
                {}, [&](OpBuilder &b, Location l, ValueRange a) {
                  Value n = mulF(b, l, subF(b, l, a[1], a[2]), a[3]);
                  Value dd = cst(b, l, n, d);
                  Value centered = subF(b, l, a[0], divF(b, l, a[4], dd));
                  return mulF(b, l, a[3],
                              subF(b, l, centered,
                                   mulF(b, l, n, divF(b, l, a[5], dd))));
                });
    Value dw = reduceRows(
        rewriter, loc, {g, x}, {mean, inv},
        [](OpBuilder &b, Location l, ValueRange a) {
          return mulF(b, l, a[0], mulF(b, l, subF(b, l, a[1], a[2]), a[3]));
        });
    Value db = reduceRows(rewriter, loc, g, {}, first);
    rewriter.replaceOp(op, {dx, dw, db});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

struct CrossEntropyLowering : OpConversionPattern<CrossEntropyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CrossEntropyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    std::optional<int64_t> ignore = op.getIgnoreIndex();
    LossRows r = lossRows(rewriter, loc, adaptor.getLogits(),
                          adaptor.getTargets(), ignore);
    Value count = targetCount(rewriter, loc, r.targets, ignore,
                              op.getType().getElementType());
    Value total = lossSum(rewriter, loc, r, ignore);
    Value mean = elementwise(rewriter, loc, op.getType(), {total, count},
                             [](OpBuilder &b, Location l, ValueRange a) {
                               return divF(b, l, a[0], a[1]);
                             });
    rewriter.replaceOp(op, mean);
    return success();
  }
};

struct CrossEntropyGradLowering : OpConversionPattern<CrossEntropyGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CrossEntropyGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    std::optional<int64_t> ignore = op.getIgnoreIndex();
    LossRows r = lossRows(rewriter, loc, adaptor.getLogits(),
                          adaptor.getTargets(), ignore);
    Value count = targetCount(rewriter, loc, r.targets, ignore,
                              op.getType().getElementType());
    Value d = logitsGrad(rewriter, loc, r, adaptor.getGrad(), count, ignore);
    rewriter.replaceOp(op, reshape(rewriter, loc, d, op.getType()));
    return success();
  }
};

} // namespace

void mlir::tg::populateTGReductionToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ReduceSumLowering, SoftmaxLowering, SoftmaxGradLowering,
               RMSNormLowering, RMSNormGradLowering, LayerNormLowering,
               LayerNormGradLowering, CrossEntropyLowering,
               CrossEntropyGradLowering>(patterns.getContext());
}
