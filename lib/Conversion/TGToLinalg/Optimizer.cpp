//===- Optimizer.cpp - global norm, clipping and updates → linalg ---------===//

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

struct SumSquaresLowering : OpConversionPattern<SumSquaresOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SumSquaresOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    // Accumulated in f64: a chain of f32 additions over a 3.3M-parameter
    // model's gradients lost 0.3% of the norm, and with it the clip factor.
    Type f64 = rewriter.getF64Type();
    Value input = adaptor.getInput();
    int64_t rank = tensorType(input).getRank();
    SmallVector<int64_t> all;
    for (int64_t i = 0; i < rank; ++i)
      all.push_back(i);
    Value zero = filled(rewriter, loc, RankedTensorType::get({}, f64), 0.0);
    rewriter.replaceOp(
        op,
        generic(rewriter, loc, input,
                AffineMap::getMultiDimIdentityMap(rank, getContext()), zero,
                AffineMap::get(rank, 0, {}, getContext()), iterators(rank, all),
                [&](OpBuilder &b, Location l, ValueRange a) {
                  Value x = castFloat(b, l, a[0], f64);
                  return addF(b, l, a[1], mulF(b, l, x, x));
                }));
    return success();
  }
};

/// Operands of one elementwise op of the norm: a GPU kernel's parameters
/// (three words per 0-d buffer) stay far below PTX's 4 KiB.
constexpr size_t kNormFanIn = 32;

struct GlobalNormLowering : OpConversionPattern<GlobalNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GlobalNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto scalarType = llvm::cast<RankedTensorType>(op.getType());
    auto f64Scalar = RankedTensorType::get({}, rewriter.getF64Type());
    auto sum = [&](OpBuilder &b, Location l, ValueRange a) -> Value {
      Value total = constantFloat(b, l, b.getF64Type(), 0.0);
      for (Value s : a)
        total = addF(b, l, total, s);
      return total;
    };
    // The sums of squares added in groups of at most kNormFanIn, in operand
    // order (a model has hundreds of parameters).
    SmallVector<Value> sums(adaptor.getSums());
    while (sums.size() > kNormFanIn) {
      SmallVector<Value> partials;
      for (size_t i = 0; i < sums.size(); i += kNormFanIn) {
        ValueRange group =
            ValueRange(sums).slice(i, std::min(kNormFanIn, sums.size() - i));
        partials.push_back(elementwise(rewriter, loc, f64Scalar, group, sum));
      }
      sums = std::move(partials);
    }
    Type resultElement = scalarType.getElementType();
    rewriter.replaceOp(
        op, elementwise(rewriter, loc, scalarType, sums,
                        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                          Value norm = math::SqrtOp::create(b, l, sum(b, l, a));
                          return castFloat(b, l, norm, resultElement);
                        }));
    return success();
  }
};

struct ClipFactorLowering : OpConversionPattern<ClipFactorOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ClipFactorOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    double maxNorm = op.getMaxNorm().convertToDouble();
    rewriter.replaceOp(
        op, elementwise(
                rewriter, op.getLoc(),
                llvm::cast<RankedTensorType>(op.getType()), adaptor.getNorm(),
                [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                  Type t = a[0].getType();
                  Value denom = addF(b, l, a[0], constantFloat(b, l, t, 1e-6));
                  Value f = divF(b, l, constantFloat(b, l, t, maxNorm), denom);
                  return arith::MinimumFOp::create(b, l, f,
                                                   constantFloat(b, l, t, 1.0));
                }));
    return success();
  }
};

/// With a skip flag (the gradients overflowed), `updated` keeps `old`:
/// both are scalars of the elementwise body, `skip` a 0-d operand's.
Value unlessSkipped(OpBuilder &b, Location l, Value skip, Value old,
                    Value updated) {
  if (!skip)
    return updated;
  Value skipped =
      arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, skip,
                            constantFloat(b, l, skip.getType(), 0.0));
  return arith::SelectOp::create(b, l, skipped, old, updated);
}

/// `operands` and, when there is one, the skip flag last.
SmallVector<Value> withSkip(SmallVector<Value> operands, Value skip) {
  if (skip)
    operands.push_back(skip);
  return operands;
}

/// In a body whose first `n` arguments are the withSkip operands: the skip
/// flag's element, or null when the update has none.
Value skipOf(ValueRange args, size_t n) {
  return args.size() > n ? args[n] : Value();
}

/// Whether the scalar `x` is inf or NaN (|x| < inf fails for both).
Value notFinite(OpBuilder &b, Location l, Value x) {
  Value magnitude = math::AbsFOp::create(b, l, x);
  Value finite = arith::CmpFOp::create(
      b, l, arith::CmpFPredicate::OLT, magnitude,
      constantFloat(b, l, x.getType(),
                    std::numeric_limits<double>::infinity()));
  return arith::XOrIOp::create(
      b, l, finite, arith::ConstantIntOp::create(b, l, b.getI1Type(), 1));
}

/// 1 or 0 of the scalar's type: the skip flag's encoding.
Value flag(OpBuilder &b, Location l, Value condition, Type t) {
  return arith::SelectOp::create(b, l, condition, constantFloat(b, l, t, 1.0),
                                 constantFloat(b, l, t, 0.0));
}

struct NotFiniteLowering : OpConversionPattern<NotFiniteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NotFiniteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = llvm::cast<RankedTensorType>(op.getType());
    rewriter.replaceOp(
        op, elementwise(rewriter, op.getLoc(), type, adaptor.getInput(),
                        [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                          return flag(b, l, notFinite(b, l, a[0]),
                                      a[0].getType());
                        }));
    return success();
  }
};

struct LossScaleUpdateLowering : OpConversionPattern<LossScaleUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LossScaleUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = llvm::cast<RankedTensorType>(op.getScale().getType());
    int64_t interval = op.getGrowthInterval();
    SmallVector<Value, 3> in{adaptor.getScale(), adaptor.getGrowthTracker(),
                             adaptor.getScaledNorm()};
    // An overflow: the norm is inf or nan.
    auto overflow = notFinite;
    auto one = [](OpBuilder &b, Location l, Type t) {
      return constantFloat(b, l, t, 1.0);
    };
    // Whether this clean step completes a growth interval (the tracker
    // counts the clean steps before it).
    auto completesInterval = [&](OpBuilder &b, Location l,
                                 Value tracker) -> Value {
      Type t = tracker.getType();
      return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE,
                                   addF(b, l, tracker, one(b, l, t)),
                                   constantFloat(b, l, t, interval));
    };
    Value inverse =
        elementwise(rewriter, loc, type, adaptor.getScale(),
                    [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                      return divF(b, l, one(b, l, a[0].getType()), a[0]);
                    });
    Value skip =
        elementwise(rewriter, loc, type, adaptor.getScaledNorm(),
                    [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                      return flag(b, l, overflow(b, l, a[0]), a[0].getType());
                    });
    Value scale =
        elementwise(rewriter, loc, type, in,
                    [&](OpBuilder &b, Location l, ValueRange a) -> Value {
                      if (interval == 0)
                        return a[0];
                      Type t = a[0].getType();
                      Value kept = arith::SelectOp::create(
                          b, l, completesInterval(b, l, a[1]),
                          mulF(b, l, a[0], constantFloat(b, l, t, 2.0)), a[0]);
                      return arith::SelectOp::create(
                          b, l, overflow(b, l, a[2]),
                          mulF(b, l, a[0], constantFloat(b, l, t, 0.5)), kept);
                    });
    // The tracker counts clean steps since the last change of scale. (The
    // scale's op comes first: in place, nothing may read the old tracker
    // after the new one is written.)
    auto tracked = [&](OpBuilder &b, Location l, ValueRange a) -> Value {
      Type t = a[0].getType();
      Value next = addF(b, l, a[0], one(b, l, t));
      if (interval > 0)
        next = arith::SelectOp::create(b, l, completesInterval(b, l, a[0]),
                                       constantFloat(b, l, t, 0), next);
      return arith::SelectOp::create(b, l, overflow(b, l, a[1]),
                                     constantFloat(b, l, t, 0), next);
    };
    Value tracker = elementwise(
        rewriter, loc, type,
        {adaptor.getGrowthTracker(), adaptor.getScaledNorm()}, tracked);
    rewriter.replaceOp(op, {inverse, skip, scale, tracker});
    return success();
  }
};

struct SGDUpdateLowering : OpConversionPattern<SGDUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SGDUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    double wd = op.getWeightDecay().convertToDouble();
    RankedTensorType type = tensorType(op.getNewParam());
    rewriter.replaceOp(
        op,
        elementwise(
            rewriter, op.getLoc(), type,
            withSkip({adaptor.getParam(), adaptor.getGrad(), adaptor.getLr()},
                     adaptor.getSkip()),
            [&](OpBuilder &b, Location l, ValueRange a) {
              Type t = a[0].getType();
              Value lr = castFloat(b, l, a[2], t);
              Value d = addF(b, l, a[1],
                             mulF(b, l, constantFloat(b, l, t, wd), a[0]));
              return unlessSkipped(b, l, skipOf(a, 3), a[0],
                                   subF(b, l, a[0], mulF(b, l, lr, d)));
            }));
    return success();
  }
};

struct SGDMomentumUpdateLowering : OpConversionPattern<SGDMomentumUpdateOp> {
  SGDMomentumUpdateLowering(MLIRContext *ctx, bool fuseUpdates)
      : OpConversionPattern(ctx), fuseUpdates(fuseUpdates) {}
  LogicalResult
  matchAndRewrite(SGDMomentumUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    double wd = op.getWeightDecay().convertToDouble(),
           mu = op.getMomentum().convertToDouble();
    RankedTensorType type = tensorType(op.getNewParam());
    Value skip = adaptor.getSkip();
    auto newBuffer = [&](OpBuilder &b, Location l, Value p, Value grad,
                         Value old, Value step, Value skipFlag) {
      Type t = p.getType();
      Value d = addF(b, l, grad, mulF(b, l, constantFloat(b, l, t, wd), p));
      Value firstStep =
          arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLE, step,
                                constantFloat(b, l, step.getType(), 1.0));
      Value next = addF(b, l, mulF(b, l, constantFloat(b, l, t, mu), old), d);
      return unlessSkipped(b, l, skipFlag, old,
                           arith::SelectOp::create(b, l, firstStep, d, next));
    };
    auto newParam = [&](OpBuilder &b, Location l, Value p, Value buffer,
                        Value lr, Value skipFlag) {
      Value rate = castFloat(b, l, lr, p.getType());
      return unlessSkipped(b, l, skipFlag, p,
                           subF(b, l, p, mulF(b, l, rate, buffer)));
    };
    if (fuseUpdates) {
      // One loop for the buffer and the parameter (see AdamW's).
      SmallVector<Value> results = elementwiseResults(
          rewriter, loc, {type, tensorType(op.getNewMomentumBuffer())},
          withSkip({adaptor.getParam(), adaptor.getGrad(),
                    adaptor.getMomentumBuffer(), adaptor.getStep(),
                    adaptor.getLr()},
                   skip),
          [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
            Value buffer =
                newBuffer(b, l, a[0], a[1], a[2], a[3], skipOf(a, 5));
            return {newParam(b, l, a[0], buffer, a[4], skipOf(a, 5)), buffer};
          });
      rewriter.replaceOp(op, results);
      return success();
    }
    Value buffer = elementwise(
        rewriter, loc, type,
        withSkip({adaptor.getParam(), adaptor.getGrad(),
                  adaptor.getMomentumBuffer(), adaptor.getStep()},
                 skip),
        [&](OpBuilder &b, Location l, ValueRange a) {
          return newBuffer(b, l, a[0], a[1], a[2], a[3], skipOf(a, 4));
        });
    Value param = elementwise(
        rewriter, loc, type,
        withSkip({adaptor.getParam(), buffer, adaptor.getLr()}, skip),
        [&](OpBuilder &b, Location l, ValueRange a) {
          return newParam(b, l, a[0], a[1], a[2], skipOf(a, 3));
        });
    rewriter.replaceOp(op, {param, buffer});
    return success();
  }

  bool fuseUpdates;
};

struct AdamWUpdateLowering : OpConversionPattern<AdamWUpdateOp> {
  AdamWUpdateLowering(MLIRContext *ctx, bool fuseUpdates)
      : OpConversionPattern(ctx), fuseUpdates(fuseUpdates) {}
  LogicalResult
  matchAndRewrite(AdamWUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    double b1 = op.getBeta1().convertToDouble(),
           b2 = op.getBeta2().convertToDouble();
    double eps = op.getEps().convertToDouble(),
           wd = op.getWeightDecay().convertToDouble();
    RankedTensorType paramType = tensorType(op.getNewParam());
    RankedTensorType momentType = tensorType(op.getNewExpAvg());
    Type f32 = rewriter.getF32Type();
    auto c = [&](OpBuilder &b, Location l, double v) {
      return constantFloat(b, l, f32, v);
    };
    Value skip = adaptor.getSkip();
    // The three results as functions of elements; the moments' old values
    // are kept when the step is skipped.
    auto moment = [&](double beta, bool squared) {
      return [&, beta, squared](OpBuilder &b, Location l, Value grad, Value old,
                                Value skipFlag) {
        Value g = castFloat(b, l, grad, f32);
        Value term = squared ? mulF(b, l, g, g) : g;
        return unlessSkipped(b, l, skipFlag, old,
                             addF(b, l, mulF(b, l, c(b, l, beta), old),
                                  mulF(b, l, c(b, l, 1 - beta), term)));
      };
    };
    auto firstMoment = moment(b1, false), secondMoment = moment(b2, true);
    auto newParam = [&](OpBuilder &b, Location l, Value p, Value m, Value v,
                        Value lr, Value t, Value skipFlag) {
      Value param = castFloat(b, l, p, f32);
      // Bias corrections 1 − β^t.
      Value bc1 =
          subF(b, l, c(b, l, 1.0), math::PowFOp::create(b, l, c(b, l, b1), t));
      Value bc2 =
          subF(b, l, c(b, l, 1.0), math::PowFOp::create(b, l, c(b, l, b2), t));
      Value decayed = mulF(
          b, l, param, subF(b, l, c(b, l, 1.0), mulF(b, l, lr, c(b, l, wd))));
      Value denom = addF(b, l,
                         divF(b, l, math::SqrtOp::create(b, l, v),
                              math::SqrtOp::create(b, l, bc2)),
                         c(b, l, eps));
      Value stepSize = divF(b, l, lr, bc1);
      Value next =
          subF(b, l, decayed, mulF(b, l, stepSize, divF(b, l, m, denom)));
      next = unlessSkipped(b, l, skipFlag, param, next);
      return castFloat(b, l, next, paramType.getElementType());
    };
    if (fuseUpdates) {
      // One loop: the parameter, its gradient and both moments are read
      // once and written once (three loops read the gradient twice and the
      // new moments back).
      SmallVector<Value> results = elementwiseResults(
          rewriter, loc, {paramType, momentType, momentType},
          withSkip({adaptor.getParam(), adaptor.getGrad(), adaptor.getExpAvg(),
                    adaptor.getExpAvgSq(), adaptor.getLr(), adaptor.getStep()},
                   skip),
          [&](OpBuilder &b, Location l, ValueRange a) -> SmallVector<Value> {
            Value m = firstMoment(b, l, a[1], a[2], skipOf(a, 6));
            Value v = secondMoment(b, l, a[1], a[3], skipOf(a, 6));
            return {newParam(b, l, a[0], m, v, a[4], a[5], skipOf(a, 6)), m, v};
          });
      rewriter.replaceOp(op, results);
      return success();
    }
    auto momentLoop = [&](Value old, auto rule) {
      return elementwise(rewriter, loc, momentType,
                         withSkip({adaptor.getGrad(), old}, skip),
                         [&](OpBuilder &b, Location l, ValueRange a) {
                           return rule(b, l, a[0], a[1], skipOf(a, 2));
                         });
    };
    Value m = momentLoop(adaptor.getExpAvg(), firstMoment);
    Value v = momentLoop(adaptor.getExpAvgSq(), secondMoment);
    Value p = elementwise(
        rewriter, loc, paramType,
        withSkip({adaptor.getParam(), m, v, adaptor.getLr(), adaptor.getStep()},
                 skip),
        [&](OpBuilder &b, Location l, ValueRange a) {
          return newParam(b, l, a[0], a[1], a[2], a[3], a[4], skipOf(a, 5));
        });
    rewriter.replaceOp(op, {p, m, v});
    return success();
  }

  bool fuseUpdates;
};

} // namespace

void mlir::tg::populateTGOptimizerToLinalgPatterns(RewritePatternSet &patterns,
                                                   bool fuseUpdates) {
  patterns.add<SumSquaresLowering, GlobalNormLowering, ClipFactorLowering,
               LossScaleUpdateLowering, NotFiniteLowering, SGDUpdateLowering>(
      patterns.getContext());
  patterns.add<SGDMomentumUpdateLowering, AdamWUpdateLowering>(
      patterns.getContext(), fuseUpdates);
}
