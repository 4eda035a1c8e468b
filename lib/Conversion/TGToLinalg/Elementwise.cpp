//===- Elementwise.cpp - tg elementwise ops and RoPE → linalg.generic -----===//

#include "Utils.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;

namespace {

/// Lowers an op whose result is an elementwise function of its operands
/// (broadcast under NumPy rules). On bf16/f16 values the function computes
/// in f32 and its result is rounded once (as the reference interpreter
/// rounds each low-precision result; e.g. the sum of a bf16 value's
/// gradients).
template <typename OpTy>
struct ElementwiseLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using Fn = std::function<Value(OpTy, OpBuilder &, Location, ValueRange)>;
  ElementwiseLowering(MLIRContext *ctx, Fn fn)
      : OpConversionPattern<OpTy>(ctx), fn(std::move(fn)) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = llvm::cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<Value> inputs;
    for (Value v : adaptor.getOperands())
      inputs.push_back(v);
    Type element = type.getElementType();
    Value result =
        elementwise(rewriter, op.getLoc(), type, inputs,
                    [&](OpBuilder &b, Location l, ValueRange a) {
                      if (!isLowPrecisionFloat(element))
                        return fn(op, b, l, a);
                      SmallVector<Value> wide;
                      for (Value v : a)
                        wide.push_back(isLowPrecisionFloat(v.getType())
                                           ? castFloat(b, l, v, b.getF32Type())
                                           : v);
                      return castFloat(b, l, fn(op, b, l, wide), element);
                    });
    if (Operation *generic = result.getDefiningOp();
        generic && op->hasAttr(TGDialect::kSavedCopyAttrName))
      generic->setAttr(kSavedCopyAttrName, rewriter.getUnitAttr());
    rewriter.replaceOp(op, result);
    return success();
  }
  Fn fn;
};

Value sigmoid(OpBuilder &b, Location l, Value x) {
  Value negExp = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x));
  return divF(b, l, cst(b, l, x, 1.0), addF(b, l, cst(b, l, x, 1.0), negExp));
}

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCoeff = 0.044715;

Value gelu(OpBuilder &b, Location l, Value x, bool tanhForm) {
  Value half = cst(b, l, x, 0.5), one = cst(b, l, x, 1.0);
  Value inner;
  if (tanhForm) {
    Value x3 = mulF(b, l, mulF(b, l, x, x), x);
    Value u = mulF(b, l, cst(b, l, x, kSqrt2OverPi),
                   addF(b, l, x, mulF(b, l, cst(b, l, x, kGeluCoeff), x3)));
    inner = math::TanhOp::create(b, l, u);
  } else {
    inner = math::ErfOp::create(b, l, mulF(b, l, x, cst(b, l, x, M_SQRT1_2)));
  }
  return mulF(b, l, mulF(b, l, half, x), addF(b, l, one, inner));
}

Value geluDerivative(OpBuilder &b, Location l, Value x, bool tanhForm) {
  Value half = cst(b, l, x, 0.5), one = cst(b, l, x, 1.0);
  if (tanhForm) {
    Value x2 = mulF(b, l, x, x);
    Value u = mulF(
        b, l, cst(b, l, x, kSqrt2OverPi),
        addF(b, l, x, mulF(b, l, cst(b, l, x, kGeluCoeff), mulF(b, l, x2, x))));
    Value t = math::TanhOp::create(b, l, u);
    Value du =
        mulF(b, l, cst(b, l, x, kSqrt2OverPi),
             addF(b, l, one, mulF(b, l, cst(b, l, x, 3 * kGeluCoeff), x2)));
    Value sech2 = subF(b, l, one, mulF(b, l, t, t));
    return addF(b, l, mulF(b, l, half, addF(b, l, one, t)),
                mulF(b, l, mulF(b, l, half, x), mulF(b, l, sech2, du)));
  }
  Value cdf = mulF(
      b, l, half,
      addF(b, l, one,
           math::ErfOp::create(b, l, mulF(b, l, x, cst(b, l, x, M_SQRT1_2)))));
  Value pdf = mulF(b, l, cst(b, l, x, 1.0 / std::sqrt(2.0 * M_PI)),
                   math::ExpOp::create(
                       b, l, mulF(b, l, cst(b, l, x, -0.5), mulF(b, l, x, x))));
  return addF(b, l, cdf, mulF(b, l, x, pdf));
}

struct RopeLowering : OpConversionPattern<RopeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // y[..., i] = x[i]·cos − x[i+R/2]·sin,  y[..., i+R/2] = x[i+R/2]·cos +
    // x[i]·sin with angle s·f_i (f_i = theta^(−2i/R) unless the op lists its
    // frequencies) for the R rotated dimensions. cos and sin are constant
    // tables of (position, column), computed here in f64 as the reference
    // does, then rounded to the element type; every batch row and head reads
    // them. Columns past R read cos 1 and sin 0: they pass through exactly.
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    SmallVector<double> frequencies = op.getInverseFrequencies();
    int64_t S = type.getDimSize(1), D = type.getDimSize(3);
    int64_t half = static_cast<int64_t>(frequencies.size()), R = 2 * half;
    double sign = op.getInverse() ? -1.0 : 1.0;
    Type elt = type.getElementType();
    MLIRContext *ctx = getContext();
    // At positions (generation), the tables cover every position below
    // max_position and each token reads its row.
    Value positions = adaptor.getPositions();
    int64_t rows = positions ? *op.getMaxPosition() : S;
    auto tableType = RankedTensorType::get({rows, D}, elt);
    const llvm::fltSemantics &semantics =
        llvm::cast<FloatType>(elt).getFloatSemantics();
    auto table = [&](bool sine) -> Value {
      SmallVector<APFloat> values;
      values.reserve(rows * D);
      for (int64_t s = 0; s < rows; ++s)
        for (int64_t i = 0; i < D; ++i) {
          double angle =
              i < R ? static_cast<double>(s) * frequencies[i % half] * sign
                    : 0.0;
          APFloat v(sine ? std::sin(angle) : std::cos(angle));
          bool lost;
          v.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
          values.push_back(v);
        }
      return arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(tableType, values));
    };
    Value cosT = table(false), sinT = table(true);
    Value input = adaptor.getInput();
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(), elt);
    AffineMap identity = AffineMap::getMultiDimIdentityMap(4, ctx);
    AffineMap byPosition = dimsMap(ctx, 4, {1, 3});
    SmallVector<Value> inputs{input};
    SmallVector<AffineMap> maps{identity};
    if (!positions) {
      inputs.append({cosT, sinT});
      maps.append({byPosition, byPosition});
    }
    Value result = generic(
        rewriter, loc, inputs, maps, init, identity, iterators(4),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value bIdx = linalg::IndexOp::create(b, l, 0);
          Value sIdx = linalg::IndexOp::create(b, l, 1);
          Value hIdx = linalg::IndexOp::create(b, l, 2);
          Value iIdx = linalg::IndexOp::create(b, l, 3);
          Value cosV, sinV;
          if (positions) {
            Value at = clampIndex(
                b, l,
                tensor::ExtractOp::create(b, l, positions,
                                          ValueRange{bIdx, sIdx}),
                rows);
            cosV = tensor::ExtractOp::create(b, l, cosT, ValueRange{at, iIdx});
            sinV = tensor::ExtractOp::create(b, l, sinT, ValueRange{at, iIdx});
          } else {
            cosV = args[1];
            sinV = args[2];
          }
          Value halfIdx = arith::ConstantIndexOp::create(b, l, half);
          Value first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                              iIdx, halfIdx);
          Value partnerIdx = arith::SelectOp::create(
              b, l, first, arith::AddIOp::create(b, l, iIdx, halfIdx),
              arith::SubIOp::create(b, l, iIdx, halfIdx));
          Value partner = tensor::ExtractOp::create(
              b, l, input, ValueRange{bIdx, sIdx, hIdx, partnerIdx});
          Value xc = mulF(b, l, args[0], cosV), ps = mulF(b, l, partner, sinV);
          return arith::SelectOp::create(b, l, first, subF(b, l, xc, ps),
                                         addF(b, l, xc, ps));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::tg::populateTGElementwiseToLinalgPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwiseLowering<AddOp>>(
      ctx, [](AddOp, OpBuilder &b, Location l, ValueRange a) {
        return addF(b, l, a[0], a[1]);
      });
  patterns.add<ElementwiseLowering<SubOp>>(
      ctx, [](SubOp, OpBuilder &b, Location l, ValueRange a) {
        return subF(b, l, a[0], a[1]);
      });
  patterns.add<ElementwiseLowering<MulOp>>(
      ctx, [](MulOp, OpBuilder &b, Location l, ValueRange a) {
        return mulF(b, l, a[0], a[1]);
      });
  patterns.add<ElementwiseLowering<ScaleOp>>(ctx, [](ScaleOp op, OpBuilder &b,
                                                     Location l, ValueRange a) {
    return mulF(b, l, a[0], cst(b, l, a[0], op.getFactor().convertToDouble()));
  });
  patterns.add<ElementwiseLowering<ReluOp>>(
      ctx, [](ReluOp, OpBuilder &b, Location l, ValueRange a) {
        return arith::MaximumFOp::create(b, l, a[0], cst(b, l, a[0], 0.0));
      });
  patterns.add<ElementwiseLowering<GeluOp>>(
      ctx, [](GeluOp op, OpBuilder &b, Location l, ValueRange a) {
        return gelu(b, l, a[0], op.getApproximate() == "tanh");
      });
  patterns.add<ElementwiseLowering<SiluOp>>(
      ctx, [](SiluOp, OpBuilder &b, Location l, ValueRange a) {
        return mulF(b, l, a[0], sigmoid(b, l, a[0]));
      });
  patterns.add<ElementwiseLowering<SigmoidOp>>(
      ctx, [](SigmoidOp, OpBuilder &b, Location l, ValueRange a) {
        return sigmoid(b, l, a[0]);
      });
  patterns.add<ElementwiseLowering<SigmoidGradOp>>(
      ctx, [](SigmoidGradOp, OpBuilder &b, Location l, ValueRange a) {
        Value one = cst(b, l, a[1], 1.0);
        return mulF(b, l, a[0], mulF(b, l, a[1], subF(b, l, one, a[1])));
      });
  patterns.add<ElementwiseLowering<ReluGradOp>>(
      ctx, [](ReluGradOp, OpBuilder &b, Location l, ValueRange a) {
        Value positive = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                               a[1], cst(b, l, a[1], 0.0));
        return arith::SelectOp::create(b, l, positive, a[0],
                                       cst(b, l, a[0], 0.0));
      });
  patterns.add<ElementwiseLowering<GeluGradOp>>(
      ctx, [](GeluGradOp op, OpBuilder &b, Location l, ValueRange a) {
        return mulF(b, l, a[0],
                    geluDerivative(b, l, a[1], op.getApproximate() == "tanh"));
      });
  patterns.add<ElementwiseLowering<SiluGradOp>>(
      ctx, [](SiluGradOp, OpBuilder &b, Location l, ValueRange a) {
        Value s = sigmoid(b, l, a[1]), one = cst(b, l, a[1], 1.0);
        Value d = mulF(b, l, s,
                       addF(b, l, one, mulF(b, l, a[1], subF(b, l, one, s))));
        return mulF(b, l, a[0], d);
      });
  patterns.add<ElementwiseLowering<CastOp>>(
      ctx, [](CastOp op, OpBuilder &b, Location l, ValueRange a) {
        return castFloat(b, l, a[0], op.getType().getElementType());
      });
  patterns.add<RopeLowering>(ctx);
}
