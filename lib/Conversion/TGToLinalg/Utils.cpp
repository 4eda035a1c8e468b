//===- Utils.cpp - helpers shared by the tg → linalg patterns -------------===//

#include "Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

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

Value lowering::reshape(OpBuilder &b, Location loc, Value v,
                        RankedTensorType target) {
  RankedTensorType source = tensorType(v);
  if (source.getShape() == target.getShape())
    return v;
  // Through a 1-D (or, for rank 0, a [1]) intermediate: always valid for
  // static shapes.
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
  int64_t rank = resultType.getRank();
  SmallVector<Value> operands;
  SmallVector<AffineMap> maps;
  for (Value in : inputs) {
    auto [operand, map] = broadcastOperand(b, loc, in, resultType.getShape());
    operands.push_back(operand);
    maps.push_back(map);
  }
  Value init = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                       resultType.getElementType());
  return generic(b, loc, operands, maps, init,
                 AffineMap::getMultiDimIdentityMap(rank, b.getContext()),
                 iterators(rank),
                 [&](OpBuilder &nb, Location nl, ValueRange args) {
                   return body(nb, nl, args.drop_back());
                 });
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
  unsigned from = v.getType().getIntOrFloatBitWidth(),
           to = type.getIntOrFloatBitWidth();
  if (from == to)
    return v;
  if (from < to)
    return arith::ExtFOp::create(b, loc, type, v);
  return arith::TruncFOp::create(b, loc, type, v);
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
