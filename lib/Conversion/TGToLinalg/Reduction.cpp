//===- Reduction.cpp - sums, softmax, norms and the loss → linalg ---------===//
//
// Every op here is built from two generic shapes: a reduction over one axis,
// and a "rowwise" elementwise op that reads per-row statistics (the reduced
// tensors) and per-column vectors (norm weights) alongside full tensors.
//
// A norm or norm gradient whose `tg.tiling` is #tg.row_tasks runs as
// parallel tasks over tiles of that many rows (rowTasks): a task computes
// its rows' statistics and then their outputs, instead of one pass over the
// whole tensor per statistic.
//
//===----------------------------------------------------------------------===//

#include "Utils.h"
#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <algorithm>
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

//===----------------------------------------------------------------------===//
// Row tasks
//===----------------------------------------------------------------------===//

/// What a task computes from its rows ([R, d] slices of the inputs, in
/// order): its rows of each row result ([R, d]), then one [d] vector per
/// partial sum.
using RowTaskBody =
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)>;

/// The rows of `inputs` (all of one shape [..., d]; every dimension but the
/// last is a row index) as parallel tasks of `tileRows` rows each, in an
/// scf.forall: full tiles in one, the remainder in a second. Returns the
/// row results in the inputs' shape (element types `rowTypes`), then each
/// partial (element types `partialTypes`) summed over the tasks ([d]).
SmallVector<Value> rowTasks(OpBuilder &b, Location loc, ValueRange inputs,
                            int64_t tileRows, ArrayRef<Type> rowTypes,
                            ArrayRef<Type> partialTypes, RowTaskBody body) {
  RankedTensorType type = tensorType(inputs[0]);
  int64_t rank = type.getRank(), d = type.getShape().back();
  int64_t n = type.getNumElements() / std::max<int64_t>(d, 1);
  SmallVector<ReassociationIndices> toMatrix{
      llvm::to_vector(llvm::seq<int64_t>(0, rank - 1)), {rank - 1}};
  SmallVector<Value> matrices;
  for (Value v : inputs)
    matrices.push_back(
        tensor::CollapseShapeOp::create(b, loc, v, toMatrix).getResult());
  int64_t full = n / tileRows, rest = n % tileRows;
  int64_t tasks = full + (rest ? 1 : 0);
  SmallVector<Value> outs;
  for (Type t : rowTypes)
    outs.push_back(tensor::EmptyOp::create(b, loc, {n, d}, t));
  for (Type t : partialTypes)
    outs.push_back(tensor::EmptyOp::create(b, loc, {tasks, d}, t));
  OpFoldResult zero = b.getIndexAttr(0), one = b.getIndexAttr(1);
  auto run = [&](int64_t count, int64_t rows, int64_t firstTask) {
    auto forall = scf::ForallOp::create(b, loc, {b.getIndexAttr(count)}, outs,
                                        /*mapping=*/std::nullopt);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forall.getBody());
    OpFoldResult task = b.getIndexAttr(firstTask), row;
    if (count == 1) {
      row = b.getIndexAttr(firstTask * tileRows);
    } else {
      task = forall.getInductionVars()[0];
      row = arith::MulIOp::create(
                b, loc, forall.getInductionVars()[0],
                arith::ConstantIndexOp::create(b, loc, tileRows))
                .getResult();
    }
    SmallVector<OpFoldResult> rowOffsets{row, zero},
        rowSizes{b.getIndexAttr(rows), b.getIndexAttr(d)}, strides{one, one};
    SmallVector<Value> slices;
    for (Value m : matrices)
      slices.push_back(tensor::ExtractSliceOp::create(b, loc, m, rowOffsets,
                                                      rowSizes, strides));
    SmallVector<Value> results = body(b, loc, slices);
    ValueRange shared = forall.getRegionIterArgs();
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    for (auto [i, result] : llvm::enumerate(results)) {
      bool isRows = i < rowTypes.size();
      SmallVector<OpFoldResult> offsets{isRows ? row : task, zero};
      SmallVector<OpFoldResult> sizes{isRows ? rowSizes[0] : one,
                                      b.getIndexAttr(d)};
      tensor::ParallelInsertSliceOp::create(b, loc, result, shared[i], offsets,
                                            sizes, strides);
    }
    outs.assign(forall.getResults().begin(), forall.getResults().end());
  };
  if (full)
    run(full, tileRows, 0);
  if (rest)
    run(1, rest, full);
  SmallVector<Value> results;
  for (auto [i, out] : llvm::enumerate(outs)) {
    if (i < rowTypes.size()) {
      results.push_back(tensor::ExpandShapeOp::create(
          b, loc, type.clone(rowTypes[i]), out, toMatrix));
      continue;
    }
    results.push_back(reduceRows(b, loc, out, {}, first));
  }
  return results;
}

/// `body` over the rows of `inputs` (as rowTasks describes): as `norm`'s
/// tg.tiling says, parallel tasks of its rows each, their partial sums then
/// summed; without one, on the whole tensors at once (its partials are then
/// the sums).
SmallVector<Value> byRows(OpBuilder &b, Location loc, Operation *norm,
                          ValueRange inputs, ArrayRef<Type> rowTypes,
                          ArrayRef<Type> partialTypes, RowTaskBody body) {
  RankedTensorType type = tensorType(inputs[0]);
  auto tasks = norm->getAttrOfType<RowTasksAttr>(TGDialect::kTilingAttrName);
  if (!tasks || type.getRank() < 2 || type.getNumElements() == 0)
    return body(b, loc, inputs);
  return rowTasks(b, loc, inputs, tasks.getRows(), rowTypes, partialTypes,
                  body);
}

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

/// RMSNorm of the rows of `x` (its last axis) with `w`, as `elt`.
Value rmsNormRows(OpBuilder &b, Location loc, Value x, Value w, double eps,
                  Type elt) {
  RankedTensorType type = tensorType(x);
  int64_t last = type.getRank() - 1, d = type.getShape().back();
  Value ss = reduceAxis(b, loc, x, last, 0.0, sumOf(square));
  return rowwise(b, loc, type.clone(elt), last, x, ss, w,
                 [&](OpBuilder &nb, Location l, ValueRange a) {
                   Value r = inverseRms(nb, l, a[1], d, eps);
                   return mulF(nb, l, mulF(nb, l, a[0], r), a[2]);
                 });
}

/// RMSNorm's gradients for rows `g`, `x`: dx (as `elt`) and dw summed
/// over these rows. r = rsqrt(mean(x²)+eps), n = x·r:
/// dx = r·(g·w − n·mean(g·w·n)), dw = Σ_rows g·n.
SmallVector<Value> rmsNormGradRows(OpBuilder &b, Location loc, Value g, Value x,
                                   Value w, double eps, Type elt) {
  RankedTensorType type = tensorType(x);
  int64_t last = type.getRank() - 1, d = type.getShape().back();
  Value ss = reduceAxis(b, loc, x, last, 0.0, sumOf(square));
  // Σ g·w·x per row (a rowwise product first, then its sum).
  Value gwx = rowwise(b, loc, type, last, {g, x}, {}, w,
                      [](OpBuilder &nb, Location l, ValueRange a) {
                        return mulF(nb, l, mulF(nb, l, a[0], a[2]), a[1]);
                      });
  Value dot = reduceAxis(b, loc, gwx, last, 0.0, sumOf(first));
  Value dx =
      rowwise(b, loc, type.clone(elt), last, {g, x}, {ss, dot}, w,
              [&](OpBuilder &nb, Location l, ValueRange a) {
                Value r = inverseRms(nb, l, a[2], d, eps);
                Value n = mulF(nb, l, a[1], r);
                // mean(g·w·n) = r · Σ g·w·x / d
                Value meanGWN =
                    divF(nb, l, mulF(nb, l, a[3], r), cst(nb, l, r, d));
                Value gw = mulF(nb, l, a[0], a[4]);
                return mulF(nb, l, r, subF(nb, l, gw, mulF(nb, l, n, meanGWN)));
              });
  Value dw = reduceRows(
      b, loc, {g, x}, ss, [&](OpBuilder &nb, Location l, ValueRange a) {
        return mulF(nb, l, a[0],
                    mulF(nb, l, a[1], inverseRms(nb, l, a[2], d, eps)));
      });
  return {dx, dw};
}

struct RMSNormLowering : OpConversionPattern<RMSNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RMSNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    double eps = op.getEps().convertToDouble();
    Value w = adaptor.getWeight();
    Type elt = type.getElementType();
    rewriter.replaceOp(
        op, byRows(rewriter, loc, op, adaptor.getInput(), elt, {},
                   [&](OpBuilder &b, Location l, ValueRange rows) {
                     return SmallVector<Value>{
                         rmsNormRows(b, l, rows[0], w, eps, elt)};
                   }));
    return success();
  }
};

struct RMSNormGradLowering : OpConversionPattern<RMSNormGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RMSNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    double eps = op.getEps().convertToDouble();
    Value g = adaptor.getGrad(), x = adaptor.getInput(),
          w = adaptor.getWeight();
    Type dxElt = op.getInputGrad().getType().getElementType();
    // dw summed in the gradient's element type (per task, then over them).
    Type dwElt = tensorType(g).getElementType();
    rewriter.replaceOp(op,
                       byRows(rewriter, loc, op, {g, x}, dxElt, dwElt,
                              [&](OpBuilder &b, Location l, ValueRange rows) {
                                return rmsNormGradRows(b, l, rows[0], rows[1],
                                                       w, eps, dxElt);
                              }));
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

/// LayerNorm of the rows of `x` with `columns` (the weight, and the bias if
/// any), as `elt`.
Value layerNormRows(OpBuilder &b, Location loc, Value x, ValueRange columns,
                    double eps, Type elt) {
  RankedTensorType type = tensorType(x);
  int64_t last = type.getRank() - 1;
  auto [mean, inv] = rowMoments(b, loc, x, eps);
  bool hasBias = columns.size() > 1;
  return rowwise(b, loc, type.clone(elt), last, x, {mean, inv}, columns,
                 [&](OpBuilder &nb, Location l, ValueRange a) {
                   Value n = mulF(nb, l, subF(nb, l, a[0], a[1]), a[2]);
                   Value y = mulF(nb, l, n, a[3]);
                   return hasBias ? addF(nb, l, y, a[4]) : y;
                 });
}

/// LayerNorm's gradients for rows `g`, `x`: dx (as `elt`), dw and db
/// summed over these rows. n = (x − mean)·r, gw = g·w:
/// dx = r·(gw − mean(gw) − n·mean(gw·n)), dw = Σ g·n, db = Σ g.
SmallVector<Value> layerNormGradRows(OpBuilder &b, Location loc, Value g,
                                     Value x, Value w, double eps, Type elt) {
  RankedTensorType type = tensorType(x);
  int64_t last = type.getRank() - 1, d = type.getShape().back();
  auto [mean, inv] = rowMoments(b, loc, x, eps);
  Value gw = rowwise(b, loc, type, last, g, {}, w,
                     [](OpBuilder &nb, Location l, ValueRange a) {
                       return mulF(nb, l, a[0], a[1]);
                     });
  Value gwn = rowwise(b, loc, type, last, {gw, x}, {mean, inv}, {},
                      [](OpBuilder &nb, Location l, ValueRange a) {
                        return mulF(nb, l, a[0],
                                    mulF(nb, l, subF(nb, l, a[1], a[2]), a[3]));
                      });
  Value sumGW = reduceAxis(b, loc, gw, last, 0.0, sumOf(first));
  Value sumGWN = reduceAxis(b, loc, gwn, last, 0.0, sumOf(first));
  Value dx = rowwise(
      b, loc, type.clone(elt), last, {gw, x}, {mean, inv, sumGW, sumGWN}, {},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value n = mulF(nb, l, subF(nb, l, a[1], a[2]), a[3]);
        Value dd = cst(nb, l, n, d);
        Value centered = subF(nb, l, a[0], divF(nb, l, a[4], dd));
        return mulF(
            nb, l, a[3],
            subF(nb, l, centered, mulF(nb, l, n, divF(nb, l, a[5], dd))));
      });
  Value dw = reduceRows(
      b, loc, {g, x}, {mean, inv}, [](OpBuilder &nb, Location l, ValueRange a) {
        return mulF(nb, l, a[0], mulF(nb, l, subF(nb, l, a[1], a[2]), a[3]));
      });
  Value db = reduceRows(b, loc, g, {}, first);
  return {dx, dw, db};
}

struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    double eps = op.getEps().convertToDouble();
    Type elt = type.getElementType();
    SmallVector<Value> columns{adaptor.getWeight()};
    if (adaptor.getBias())
      columns.push_back(adaptor.getBias());
    rewriter.replaceOp(
        op, byRows(rewriter, loc, op, adaptor.getInput(), elt, {},
                   [&](OpBuilder &b, Location l, ValueRange rows) {
                     return SmallVector<Value>{
                         layerNormRows(b, l, rows[0], columns, eps, elt)};
                   }));
    return success();
  }
};

struct LayerNormGradLowering : OpConversionPattern<LayerNormGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    double eps = op.getEps().convertToDouble();
    Value g = adaptor.getGrad(), x = adaptor.getInput(),
          w = adaptor.getWeight();
    Type dxElt = op.getInputGrad().getType().getElementType();
    // dw and db summed in the gradient's element type.
    Type wElt = tensorType(g).getElementType();
    rewriter.replaceOp(
        op, byRows(rewriter, loc, op, {g, x}, dxElt, {wElt, wElt},
                   [&](OpBuilder &b, Location l, ValueRange rows) {
                     return layerNormGradRows(b, l, rows[0], rows[1], w, eps,
                                              dxElt);
                   }));
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
    Value logits =
        softcappedTensor(rewriter, loc, adaptor.getLogits(), softcapOf(op));
    LossRows r = lossRows(rewriter, loc, logits, adaptor.getTargets(), ignore);
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
    std::optional<double> softcap = softcapOf(op);
    Value logits = softcappedTensor(rewriter, loc, adaptor.getLogits(), softcap);
    LossRows r = lossRows(rewriter, loc, logits, adaptor.getTargets(), ignore);
    Value count = targetCount(rewriter, loc, r.targets, ignore,
                              op.getType().getElementType());
    Value d = logitsGrad(rewriter, loc, r, adaptor.getGrad(), count, ignore,
                         softcap);
    rewriter.replaceOp(op, reshape(rewriter, loc, d, op.getType()));
    return success();
  }
};

} // namespace

void mlir::tg::populateTGReductionToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ReduceSumLowering, SoftmaxLowering, SoftmaxGradLowering,
               CrossEntropyLowering, CrossEntropyGradLowering, RMSNormLowering,
               RMSNormGradLowering, LayerNormLowering, LayerNormGradLowering>(
      patterns.getContext());
}
