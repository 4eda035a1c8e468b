//===- Utils.cpp - helpers shared by the tg → linalg patterns -------------===//

#include "Utils.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

#include <limits>
#include <set>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::lowering;

RankedTensorType lowering::tensorType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

Value lowering::constantFloat(OpBuilder &b, Location loc, Type type,
                              double value) {
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}

Value lowering::filled(OpBuilder &b, Location loc, RankedTensorType type,
                       double value) {
  Value empty =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  Value scalar = constantFloat(b, loc, type.getElementType(), value);
  return linalg::FillOp::create(b, loc, scalar, empty).getResult(0);
}

Value lowering::generic(OpBuilder &b, Location loc, ValueRange inputs,
                        ArrayRef<AffineMap> inputMaps, Value init,
                        AffineMap outputMap,
                        ArrayRef<utils::IteratorType> iterators, BodyFn body) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(outputMap);
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, body(nb, nl, args));
      });
  return op.getResult(0);
}

SmallVector<utils::IteratorType>
lowering::iterators(int64_t rank, ArrayRef<int64_t> reductions) {
  SmallVector<utils::IteratorType> its(rank, utils::IteratorType::parallel);
  for (int64_t r : reductions)
    its[r] = utils::IteratorType::reduction;
  return its;
}

AffineMap lowering::dimsMap(MLIRContext *ctx, int64_t rank,
                            ArrayRef<int64_t> dims) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// The dimensions of the finest shape that both `a` and `b` coarsen (each
/// dimension of either is a product of consecutive ones of it): their
/// running products merged, if each divides the next. [110, 16] and
/// [22, 80] refine to [22, 5, 16]; [6, 4] and [4, 6] have none.
static std::optional<SmallVector<int64_t>>
commonRefinement(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  auto runningProducts = [](ArrayRef<int64_t> shape) {
    std::set<int64_t> products;
    int64_t p = 1;
    for (int64_t d : shape)
      products.insert(p *= d);
    return products;
  };
  std::set<int64_t> merged = runningProducts(a);
  merged.merge(runningProducts(b));
  SmallVector<int64_t> refined;
  int64_t previous = 1;
  for (int64_t p : merged) {
    if (p % previous != 0)
      return std::nullopt;
    refined.push_back(p / previous);
    previous = p;
  }
  return refined;
}

/// `v` reshaped to `shape` by one collapse or one expand, if one can.
static std::optional<Value> reshapeInOneStep(OpBuilder &b, Location loc,
                                             Value v, ArrayRef<int64_t> shape) {
  RankedTensorType source = tensorType(v);
  auto type = RankedTensorType::get(shape, source.getElementType());
  if (source.getShape() == shape)
    return v;
  if (auto groups =
          getReassociationIndicesForCollapse(source.getShape(), shape))
    return tensor::CollapseShapeOp::create(b, loc, type, v, *groups)
        .getResult();
  if (auto groups =
          getReassociationIndicesForCollapse(shape, source.getShape()))
    return tensor::ExpandShapeOp::create(b, loc, type, v, *groups).getResult();
  return std::nullopt;
}

Value lowering::reshape(OpBuilder &b, Location loc, Value v,
                        RankedTensorType target) {
  RankedTensorType source = tensorType(v);
  if (source.getShape() == target.getShape())
    return v;
  // Through the finest shape both coarsen ([110, 16] → [22, 5, 16] →
  // [22, 80]): an expand and a collapse whose views stay strided. A
  // detour through one flat dimension is no strided view of a strided
  // slice: bufferization copies it, and the folding of view chains
  // (memref alias folding) does not see through it.
  if (source.getRank() > 0 && target.getRank() > 0 &&
      source.hasStaticShape() && target.hasStaticShape()) {
    if (std::optional<Value> once =
            reshapeInOneStep(b, loc, v, target.getShape()))
      return *once;
    if (std::optional<SmallVector<int64_t>> fine =
            commonRefinement(source.getShape(), target.getShape())) {
      if (std::optional<Value> x = reshapeInOneStep(b, loc, v, *fine))
        if (std::optional<Value> y =
                reshapeInOneStep(b, loc, *x, target.getShape()))
          return *y;
    }
  }
  // Otherwise through a 1-D (or, for rank 0, a [1]) intermediate: always
  // valid for static shapes.
  Value flat = v;
  if (source.getRank() == 0) {
    flat = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({1}, source.getElementType()), v,
        ArrayRef<ReassociationIndices>{});
  } else if (source.getRank() > 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < source.getRank(); ++i)
      all.push_back(i);
    flat = tensor::CollapseShapeOp::create(
        b, loc,
        RankedTensorType::get({source.getNumElements()},
                              source.getElementType()),
        v, ArrayRef<ReassociationIndices>{all});
  }
  if (target.getRank() == 1)
    return flat;
  if (target.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, target, flat,
                                           ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t i = 0; i < target.getRank(); ++i)
    all.push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, target, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

std::pair<Value, AffineMap>
lowering::broadcastOperand(OpBuilder &b, Location loc, Value input,
                           ArrayRef<int64_t> loopShape) {
  RankedTensorType type = tensorType(input);
  int64_t rank = loopShape.size(), lead = rank - type.getRank();
  SmallVector<int64_t> keptShape, keptDims;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    int64_t size = type.getDimSize(i);
    if (size == loopShape[lead + i]) {
      keptShape.push_back(size);
      keptDims.push_back(lead + i);
    }
  }
  Value operand = input;
  if (static_cast<int64_t>(keptShape.size()) != type.getRank())
    operand = reshape(b, loc, input, type.clone(keptShape));
  return {operand, dimsMap(b.getContext(), rank, keptDims)};
}

Value lowering::elementwise(OpBuilder &b, Location loc,
                            RankedTensorType resultType, ValueRange inputs,
                            BodyFn body) {
  return elementwiseResults(b, loc, resultType, inputs,
                            [&](OpBuilder &nb, Location nl, ValueRange args) {
                              return SmallVector<Value>{body(nb, nl, args)};
                            })
      .front();
}

SmallVector<Value>
lowering::elementwiseResults(OpBuilder &b, Location loc,
                             ArrayRef<RankedTensorType> resultTypes,
                             ValueRange inputs, MultiBodyFn body) {
  ArrayRef<int64_t> shape = resultTypes.front().getShape();
  int64_t rank = shape.size();
  SmallVector<Value> operands, inits;
  SmallVector<AffineMap> maps;
  for (Value in : inputs) {
    auto [operand, map] = broadcastOperand(b, loc, in, shape);
    operands.push_back(operand);
    maps.push_back(map);
  }
  for (RankedTensorType type : resultTypes) {
    assert(type.getShape() == shape && "results of one shape");
    inits.push_back(
        tensor::EmptyOp::create(b, loc, shape, type.getElementType()));
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, b.getContext()));
  }
  auto op = linalg::GenericOp::create(
      b, loc, ValueRange(inits).getTypes(), operands, inits, maps,
      iterators(rank), [&](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl,
                                body(nb, nl, args.take_front(operands.size())));
      });
  return SmallVector<Value>(op.getResults());
}

SmallVector<int64_t> lowering::allDimsBut(int64_t rank, int64_t skip) {
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < rank; ++i)
    if (i != skip)
      dims.push_back(i);
  return dims;
}

/// Reduces same-shaped `inputs` over `axis`: `combine` gets their elements
/// and the accumulator and returns the new accumulator.
Value lowering::reduceAxis(OpBuilder &b, Location loc, ValueRange inputs,
                           int64_t axis, double initValue, BodyFn combine) {
  RankedTensorType type = tensorType(inputs[0]);
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape;
  for (int64_t d : allDimsBut(rank, axis))
    shape.push_back(type.getDimSize(d));
  Value init = filled(b, loc, type.clone(shape), initValue);
  SmallVector<AffineMap> maps(
      inputs.size(), AffineMap::getMultiDimIdentityMap(rank, b.getContext()));
  return generic(b, loc, inputs, maps, init,
                 dimsMap(b.getContext(), rank, allDimsBut(rank, axis)),
                 iterators(rank, {axis}), combine);
}

/// Elementwise over `type`: `full` inputs have its shape, `rows` have `axis`
/// dropped, `columns` are 1-D along `axis`. `body` gets them in that order.
void lowering::collectOperands(MLIRContext *ctx, int64_t rank, int64_t axis,
                               ValueRange full, ValueRange rows,
                               ValueRange columns,
                               SmallVectorImpl<Value> &inputs,
                               SmallVectorImpl<AffineMap> &maps) {
  for (Value v : full) {
    inputs.push_back(v);
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  }
  for (Value v : rows) {
    inputs.push_back(v);
    maps.push_back(dimsMap(ctx, rank, allDimsBut(rank, axis)));
  }
  for (Value v : columns) {
    inputs.push_back(v);
    maps.push_back(dimsMap(ctx, rank, {axis}));
  }
}

Value lowering::rowwise(OpBuilder &b, Location loc, RankedTensorType type,
                        int64_t axis, ValueRange full, ValueRange rows,
                        ValueRange columns, BodyFn body) {
  int64_t rank = type.getRank();
  MLIRContext *ctx = b.getContext();
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  collectOperands(ctx, rank, axis, full, rows, columns, inputs, maps);
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return generic(b, loc, inputs, maps, init,
                 AffineMap::getMultiDimIdentityMap(rank, ctx), iterators(rank),
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   return body(nb, nl, args.drop_back());
                 });
}

BodyFn lowering::sumOf(BodyFn term) {
  return [term](OpBuilder &b, Location l, ValueRange args) {
    return addF(b, l, args.back(), term(b, l, args.drop_back()));
  };
}

Value lowering::first(OpBuilder &, Location, ValueRange a) { return a[0]; }
Value lowering::softmax(OpBuilder &b, Location loc, Value x, int64_t axis) {
  RankedTensorType type = tensorType(x);
  Value mx =
      reduceAxis(b, loc, x, axis, -std::numeric_limits<double>::infinity(),
                 [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                   return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
                 });
  Value e =
      rowwise(b, loc, type, axis, x, mx, {},
              [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                return math::ExpOp::create(nb, nl, subF(nb, nl, a[0], a[1]));
              });
  Value s = reduceAxis(b, loc, e, axis, 0.0, sumOf(first));
  return rowwise(b, loc, type, axis, e, s, {},
                 [](OpBuilder &nb, Location nl, ValueRange a) {
                   return divF(nb, nl, a[0], a[1]);
                 });
}

Value lowering::cst(OpBuilder &b, Location loc, Value like, double value) {
  return constantFloat(b, loc, like.getType(), value);
}

Value lowering::clampIndex(OpBuilder &b, Location loc, Value id, int64_t size) {
  Value idx = arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value last = arith::ConstantIndexOp::create(b, loc, size - 1);
  return arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, idx, zero), last);
}

Value lowering::castFloat(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  unsigned from = v.getType().getIntOrFloatBitWidth(),
           to = type.getIntOrFloatBitWidth();
  if (from < to)
    return arith::ExtFOp::create(b, loc, type, v);
  if (from > to)
    return arith::TruncFOp::create(b, loc, type, v);
  // bf16 <-> f16: through f32, which holds both exactly.
  Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return arith::TruncFOp::create(b, loc, type, wide);
}

Type lowering::accumulationType(Type operand) {
  return isLowPrecisionFloat(operand) ? Float32Type::get(operand.getContext())
                                      : operand;
}

Value lowering::castElements(OpBuilder &b, Location loc, Value v, Type elt) {
  RankedTensorType type = tensorType(v);
  if (type.getElementType() == elt)
    return v;
  return elementwise(b, loc, type.clone(elt), v,
                     [&](OpBuilder &nb, Location nl, ValueRange a) {
                       return castFloat(nb, nl, a[0], elt);
                     });
}

Value lowering::mulF(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MulFOp::create(b, loc, x, y);
}
Value lowering::addF(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AddFOp::create(b, loc, x, y);
}
Value lowering::subF(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::SubFOp::create(b, loc, x, y);
}
Value lowering::divF(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::DivFOp::create(b, loc, x, y);
}

Value mlir::tg::lowering::isIgnored(OpBuilder &b, Location l, Value target,
                                    std::optional<int64_t> ignore) {
  if (!ignore)
    return arith::ConstantIntOp::create(b, l, b.getI1Type(), 0);
  Value ig = arith::ConstantOp::create(
      b, l, target.getType(), b.getIntegerAttr(target.getType(), *ignore));
  return arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, target, ig);
}

LossRows mlir::tg::lowering::lossRows(OpBuilder &b, Location loc, Value logits,
                                      Value targets,
                                      std::optional<int64_t> ignore) {
  RankedTensorType type = tensorType(logits);
  int64_t v = type.getShape().back(), rows = type.getNumElements() / v;
  Type elt = type.getElementType();
  LossRows r;
  r.logits = reshape(b, loc, logits, RankedTensorType::get({rows, v}, elt));
  r.targets = reshape(
      b, loc, targets,
      RankedTensorType::get({rows}, tensorType(targets).getElementType()));
  r.max =
      reduceAxis(b, loc, r.logits, 1, -std::numeric_limits<double>::infinity(),
                 [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                   return arith::MaximumFOp::create(nb, nl, a[0], a[1]);
                 });
  Value e =
      rowwise(b, loc, tensorType(r.logits), 1, r.logits, r.max, {},
              [](OpBuilder &nb, Location nl, ValueRange a) -> Value {
                return math::ExpOp::create(nb, nl, subF(nb, nl, a[0], a[1]));
              });
  r.sumExp = reduceAxis(b, loc, e, 1, 0.0, sumOf(first));
  return r;
}

Value mlir::tg::lowering::targetCount(OpBuilder &b, Location loc, Value targets,
                                      std::optional<int64_t> ignore, Type elt) {
  int64_t rank = tensorType(targets).getRank();
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < rank; ++i)
    all.push_back(i);
  Value zero = filled(b, loc, RankedTensorType::get({}, elt), 0.0);
  return generic(
      b, loc, targets, dimsMap(b.getContext(), rank, all), zero,
      AffineMap::get(rank, 0, {}, b.getContext()), iterators(rank, all),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        Value ignored = isIgnored(nb, nl, a[0], ignore);
        Value one = constantFloat(nb, nl, elt, 1.0);
        Value z = constantFloat(nb, nl, elt, 0.0);
        return addF(nb, nl, a[1],
                    arith::SelectOp::create(nb, nl, ignored, z, one));
      });
}

Value mlir::tg::lowering::lossSum(OpBuilder &b, Location loc, const LossRows &r,
                                  std::optional<int64_t> ignore) {
  MLIRContext *ctx = b.getContext();
  Value logits = r.logits;
  int64_t v = tensorType(logits).getDimSize(1);
  Type elt = tensorType(logits).getElementType();
  Value zero = filled(b, loc, RankedTensorType::get({}, elt), 0.0);
  return generic(
      b, loc, {r.targets, r.max, r.sumExp},
      {dimsMap(ctx, 1, {0}), dimsMap(ctx, 1, {0}), dimsMap(ctx, 1, {0})}, zero,
      AffineMap::get(1, 0, {}, ctx), iterators(1, {0}),
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value row = linalg::IndexOp::create(nb, l, 0);
        Value picked = tensor::ExtractOp::create(
            nb, l, logits, ValueRange{row, clampIndex(nb, l, a[0], v)});
        Value nll = subF(
            nb, l, addF(nb, l, math::LogOp::create(nb, l, a[2]), a[1]), picked);
        Value ignored = isIgnored(nb, l, a[0], ignore);
        return addF(nb, l, a[3],
                    arith::SelectOp::create(
                        nb, l, ignored, constantFloat(nb, l, elt, 0.0), nll));
      });
}

Value mlir::tg::lowering::softcapped(OpBuilder &b, Location l, Value x,
                                     double cap) {
  Value c = constantFloat(b, l, x.getType(), cap);
  return mulF(b, l, c,
              math::TanhOp::create(b, l, arith::DivFOp::create(b, l, x, c)));
}

Value mlir::tg::lowering::softcapSlope(OpBuilder &b, Location l, Value capped,
                                       double cap) {
  Type elt = capped.getType();
  Value t = arith::DivFOp::create(b, l, capped, constantFloat(b, l, elt, cap));
  return arith::MaximumFOp::create(
      b, l, subF(b, l, constantFloat(b, l, elt, 1.0), mulF(b, l, t, t)),
      constantFloat(b, l, elt, 0.0));
}

Value mlir::tg::lowering::softcappedTensor(OpBuilder &b, Location loc, Value x,
                                           std::optional<double> cap) {
  if (!cap)
    return x;
  RankedTensorType type = tensorType(x);
  MLIRContext *ctx = b.getContext();
  AffineMap id = AffineMap::getMultiDimIdentityMap(type.getRank(), ctx);
  return generic(
      b, loc, x, id,
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType()),
      id, iterators(type.getRank()),
      [&](OpBuilder &nb, Location nl, ValueRange a) -> Value {
        return softcapped(nb, nl, a[0], *cap);
      });
}

Value mlir::tg::lowering::logitsGrad(OpBuilder &b, Location loc,
                                     const LossRows &r, Value grad, Value count,
                                     std::optional<int64_t> ignore,
                                     std::optional<double> softcap) {
  RankedTensorType flat = tensorType(r.logits);
  MLIRContext *ctx = b.getContext();
  Value init =
      tensor::EmptyOp::create(b, loc, flat.getShape(), flat.getElementType());
  AffineMap scalar = AffineMap::get(2, 0, {}, ctx);
  return generic(b, loc, {r.logits, r.targets, r.max, r.sumExp, grad, count},
                 {dimsMap(ctx, 2, {0, 1}), dimsMap(ctx, 2, {0}),
                  dimsMap(ctx, 2, {0}), dimsMap(ctx, 2, {0}), scalar, scalar},
                 init, dimsMap(ctx, 2, {0, 1}), iterators(2),
                 [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                   Value p =
                       divF(nb, l,
                            math::ExpOp::create(nb, l, subF(nb, l, a[0], a[2])),
                            a[3]);
                   Value d = lossGradElement(nb, l, p, a[1],
                                             flat.getDimSize(1), a[4], a[5],
                                             ignore);
                   return softcap ? mulF(nb, l, d,
                                         softcapSlope(nb, l, a[0], *softcap))
                                  : d;
                 });
}

Value mlir::tg::lowering::lossGradElement(OpBuilder &b, Location l, Value p,
                                          Value target, int64_t vocab,
                                          Value grad, Value count,
                                          std::optional<int64_t> ignore,
                                          unsigned classDim) {
  Value col = linalg::IndexOp::create(b, l, classDim);
  Value t = clampIndex(b, l, target, vocab);
  Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, col, t);
  Value onehot =
      arith::SelectOp::create(b, l, hit, cst(b, l, p, 1.0), cst(b, l, p, 0.0));
  Value diff = subF(b, l, p, onehot);
  Value g = divF(b, l, grad ? mulF(b, l, grad, diff) : diff, count);
  Value ignored = isIgnored(b, l, target, ignore);
  return arith::SelectOp::create(b, l, ignored, cst(b, l, p, 0.0), g);
}

Value mlir::tg::lowering::transpose2D(OpBuilder &b, Location loc, Value v) {
  RankedTensorType t = tensorType(v);
  Value init = tensor::EmptyOp::create(
      b, loc, {t.getDimSize(1), t.getDimSize(0)}, t.getElementType());
  return linalg::TransposeOp::create(b, loc, v, init, ArrayRef<int64_t>{1, 0})
      .getResult()[0];
}

Value mlir::tg::lowering::matmul2D(OpBuilder &b, Location loc, Value lhs,
                                   Value rhs, Value init) {
  return linalg::MatmulOp::create(b, loc, ValueRange{lhs, rhs},
                                  ValueRange{init})
      .getResult(0);
}

/// A named product of `lhs` and `rhs` into `init` reading them through
/// `maps`.
template <typename ProductOp>
static Value productWithMaps(OpBuilder &b, Location loc, Value lhs, Value rhs,
                             Value init, ArrayRef<AffineMap> maps) {
  return ProductOp::create(b, loc, TypeRange{init.getType()},
                           ValueRange{lhs, rhs}, ValueRange{init},
                           ArrayRef<NamedAttribute>{b.getNamedAttr(
                               "indexing_maps", b.getAffineMapArrayAttr(maps))})
      .getResult(0);
}

Value mlir::tg::lowering::matmulTransposedLhs(OpBuilder &b, Location loc,
                                              Value lhs, Value rhs,
                                              Value init) {
  MLIRContext *ctx = b.getContext();
  return productWithMaps<linalg::MatmulOp>(b, loc, lhs, rhs, init,
                                           {dimsMap(ctx, 3, {2, 0}),
                                            dimsMap(ctx, 3, {2, 1}),
                                            dimsMap(ctx, 3, {0, 1})});
}

Value mlir::tg::lowering::batchMatmulTransposedLhs(OpBuilder &b, Location loc,
                                                   Value lhs, Value rhs,
                                                   Value init) {
  MLIRContext *ctx = b.getContext();
  return productWithMaps<linalg::BatchMatmulOp>(b, loc, lhs, rhs, init,
                                                {dimsMap(ctx, 4, {0, 3, 1}),
                                                 dimsMap(ctx, 4, {0, 3, 2}),
                                                 dimsMap(ctx, 4, {0, 1, 2})});
}

Value mlir::tg::lowering::sliceDim(OpBuilder &b, Location loc, int64_t dim,
                                   Value t, OpFoldResult offset, int64_t size) {
  RankedTensorType type = tensorType(t);
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  offsets[dim] = offset;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    sizes.push_back(b.getIndexAttr(static_cast<int64_t>(i) == dim ? size : d));
  return tensor::ExtractSliceOp::create(b, loc, t, offsets, sizes, strides);
}

Value mlir::tg::lowering::insertDim(OpBuilder &b, Location loc, int64_t dim,
                                    Value part, Value dest,
                                    OpFoldResult offset) {
  RankedTensorType type = tensorType(part);
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  offsets[dim] = offset;
  for (int64_t d : type.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return tensor::InsertSliceOp::create(b, loc, part, dest, offsets, sizes,
                                       strides);
}

SmallVector<Value> mlir::tg::lowering::forEachFullChunkIn(
    OpBuilder &b, Location loc, OpFoldResult begin, OpFoldResult end,
    int64_t chunk, ValueRange init, ChunkBody body) {
  SmallVector<Value> values(init);
  std::optional<int64_t> lo = getConstantIntValue(begin),
                         hi = getConstantIntValue(end);
  if (lo && hi && *hi - *lo == chunk)
    return body(b, loc, begin, chunk, values);
  if (lo && hi && *hi <= *lo)
    return values;
  Value lb = getValueOrCreateConstantIndexOp(b, loc, begin);
  Value ub = getValueOrCreateConstantIndexOp(b, loc, end);
  Value step = arith::ConstantIndexOp::create(b, loc, chunk);
  auto loop = scf::ForOp::create(
      b, loc, lb, ub, step, values,
      [&](OpBuilder &nb, Location nl, Value iv, ValueRange args) {
        scf::YieldOp::create(nb, nl, body(nb, nl, iv, chunk, args));
      });
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value>
mlir::tg::lowering::forEachFullChunk(OpBuilder &b, Location loc,
                                     OpFoldResult end, int64_t chunk,
                                     ValueRange init, ChunkBody body) {
  return forEachFullChunkIn(b, loc, b.getIndexAttr(0), end, chunk, init, body);
}

SmallVector<Value> mlir::tg::lowering::forEachChunk(OpBuilder &b, Location loc,
                                                    int64_t total,
                                                    int64_t chunk,
                                                    ValueRange init,
                                                    ChunkBody body) {
  int64_t full = total / chunk, rest = total % chunk;
  SmallVector<Value> values =
      forEachFullChunk(b, loc, b.getIndexAttr(full * chunk), chunk, init, body);
  if (rest)
    values = body(b, loc, b.getIndexAttr(full * chunk), rest, values);
  return values;
}

Value mlir::tg::lowering::computeIntoSlice(OpBuilder &b, Location loc,
                                           int64_t dim, Value dest,
                                           OpFoldResult offset, int64_t size,
                                           function_ref<Value(Value)> compute) {
  Value slice = sliceDim(b, loc, dim, dest, offset, size);
  Value zero = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(tensorType(dest).getElementType(), 0.0));
  Value zeroed = linalg::FillOp::create(b, loc, zero, slice).getResult(0);
  return insertDim(b, loc, dim, compute(zeroed), dest, offset);
}
