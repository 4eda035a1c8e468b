//===- TGOps.cpp - tg op verifiers, type inference and folders ------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/IR/TypeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tg;

namespace {
/// Builds the diagnostic emitter handed to the shape rules: errors go to the
/// op's location prefixed with its name, or nowhere when no location is known.
struct OpDiagnostics {
  std::optional<Location> loc;
  StringRef opName;
  InFlightDiagnostic operator()() const {
    return mlir::emitError(*loc) << "'" << opName << "' op ";
  }
};

LogicalResult pushInferred(FailureOr<RankedTensorType> type,
                           SmallVectorImpl<Type> &inferred) {
  if (failed(type))
    return failure();
  inferred.push_back(*type);
  return success();
}

RankedTensorType tensorTypeOf(Value v) {
  return v ? llvm::cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

/// Sets up `diag` for a shape rule. Operands of the wrong kind are left to the
/// ODS type constraints, which report them.
#define TG_DIAG(OP)                                                            \
  for (Value operand : adaptor.getOperands())                                  \
    if (!llvm::isa<RankedTensorType>(operand.getType()))                       \
      return failure();                                                        \
  OpDiagnostics diagState{location, OP::getOperationName()};                   \
  ErrorEmitter diag = location ? ErrorEmitter(diagState) : ErrorEmitter();

/// True for a constant whose every element is `value`.
bool isSplatConstant(Attribute attr, double value) {
  auto splat = llvm::dyn_cast_if_present<SplatElementsAttr>(attr);
  if (!splat || !llvm::isa<FloatType>(splat.getElementType()))
    return false;
  return splat.getSplatValue<APFloat>().convertToDouble() == value;
}
} // namespace

LogicalResult mlir::tg::verifyElementCounts(Operation *op) {
  auto check = [&](Type type, StringRef what, unsigned index) {
    return checkElementCount(type, [&] {
      return op->emitOpError() << what << " #" << index << ": ";
    });
  };
  for (auto [i, type] : llvm::enumerate(op->getOperandTypes()))
    if (failed(check(type, "operand", i)))
      return failure();
  for (auto [i, type] : llvm::enumerate(op->getResultTypes()))
    if (failed(check(type, "result", i)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> location,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto type = llvm::dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type) {
    if (location)
      mlir::emitError(*location)
          << "'tg.constant' op value must be a ranked tensor";
    return failure();
  }
  inferred.push_back(type);
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << in << " (" << in.getNumElements() << " elements) to " << out
           << " (" << out.getNumElements() << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) == reshape(x): row-major order is preserved.
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  if (auto dense =
          llvm::dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  TG_DIAG(TransposeOp)
  return pushInferred(inferTranspose(tensorTypeOf(adaptor.getInput()),
                                     adaptor.getPermutation(), diag),
                      inferred);
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  // transpose(transpose(x, p), q) == transpose(x, p∘q).
  if (auto producer = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> inner = producer.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(inner[p]);
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      return producer.getInput();
    getInputMutable().assign(producer.getInput());
    setPermutation(composed);
    return getResult();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// BroadcastOp
//===----------------------------------------------------------------------===//

LogicalResult BroadcastOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  if (!isBroadcastableTo(in.getShape(), out.getShape()))
    return emitOpError("cannot broadcast ") << in << " to " << out;
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto splat =
          llvm::dyn_cast_if_present<SplatElementsAttr>(adaptor.getInput()))
    return SplatElementsAttr::get(getType(), splat.getSplatValue<Attribute>());
  return {};
}

//===----------------------------------------------------------------------===//
// ReduceSumOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceSumOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  TG_DIAG(ReduceSumOp)
  return pushInferred(inferReduceSum(tensorTypeOf(adaptor.getInput()),
                                     adaptor.getDims(), adaptor.getKeepDims(),
                                     diag),
                      inferred);
}

OpFoldResult ReduceSumOp::fold(FoldAdaptor) {
  if (getDims().empty())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  TG_DIAG(SliceOp)
  return pushInferred(inferSlice(tensorTypeOf(adaptor.getInput()),
                                 adaptor.getAxis(), adaptor.getStart(),
                                 adaptor.getSize(), diag),
                      inferred);
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getShape() != out.getShape())
    return emitOpError("changes the shape from ")
           << in << " to " << out << "; only the element type may change";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // A widening cast back to a narrowed value's type restores it exactly:
  // cast(cast(x : bf16 -> f32) : f32 -> bf16) == x.
  if (auto producer = getInput().getDefiningOp<CastOp>()) {
    auto elt = [](Value v) {
      return llvm::cast<FloatType>(getElementTypeOrSelf(v.getType()));
    };
    if (producer.getInput().getType() == getType() &&
        elt(producer.getInput()).getWidth() <= elt(producer).getWidth() &&
        elt(producer.getInput()).getFPMantissaWidth() <=
            elt(producer).getFPMantissaWidth())
      return producer.getInput();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// MatmulOp, LinearOp
//===----------------------------------------------------------------------===//

bool mlir::tg::isLowPrecisionFloat(Type type) {
  return llvm::isa<BFloat16Type, Float16Type>(type);
}

bool mlir::tg::isProductResultElement(Type operand, Type result) {
  return operand == result || (isLowPrecisionFloat(operand) && result.isF32());
}

/// The inferred type (first) has the operands' element type; the declared
/// one may accumulate in f32 instead.
static bool isCompatibleProductTypes(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != 1 || actual.size() != 1)
    return false;
  auto a = llvm::dyn_cast<RankedTensorType>(inferred.front());
  auto b = llvm::dyn_cast<RankedTensorType>(actual.front());
  return a && b && a.getShape() == b.getShape() &&
         isProductResultElement(a.getElementType(), b.getElementType());
}

bool MatmulOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return isCompatibleProductTypes(l, r);
}

bool LinearOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return isCompatibleProductTypes(l, r);
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  TG_DIAG(MatmulOp)
  return pushInferred(inferMatmul(tensorTypeOf(adaptor.getLhs()),
                                  tensorTypeOf(adaptor.getRhs()),
                                  adaptor.getTransposeLhs(),
                                  adaptor.getTransposeRhs(), diag),
                      inferred);
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  TG_DIAG(LinearOp)
  return pushInferred(inferLinear(tensorTypeOf(adaptor.getInput()),
                                  tensorTypeOf(adaptor.getWeight()),
                                  tensorTypeOf(adaptor.getBias()), diag),
                      inferred);
}

//===----------------------------------------------------------------------===//
// Broadcasting binary ops
//===----------------------------------------------------------------------===//

#define TG_BINARY_INFER(OP)                                                    \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> location, Adaptor adaptor,        \
      SmallVectorImpl<Type> &inferred) {                                       \
    TG_DIAG(OP)                                                                \
    return pushInferred(inferBroadcastBinary(tensorTypeOf(adaptor.getLhs()),   \
                                             tensorTypeOf(adaptor.getRhs()),   \
                                             diag),                            \
                        inferred);                                             \
  }
TG_BINARY_INFER(AddOp)
TG_BINARY_INFER(SubOp)
TG_BINARY_INFER(MulOp)
#undef TG_BINARY_INFER

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  // x + 0 == x when x already has the result's shape.
  if (isSplatConstant(adaptor.getRhs(), 0.0) && getLhs().getType() == getType())
    return getLhs();
  if (isSplatConstant(adaptor.getLhs(), 0.0) && getRhs().getType() == getType())
    return getRhs();
  return {};
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatConstant(adaptor.getRhs(), 0.0) && getLhs().getType() == getType())
    return getLhs();
  return {};
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatConstant(adaptor.getRhs(), 1.0) && getLhs().getType() == getType())
    return getLhs();
  if (isSplatConstant(adaptor.getLhs(), 1.0) && getRhs().getType() == getType())
    return getRhs();
  return {};
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  double factor = getFactor().convertToDouble();
  if (factor == 1.0)
    return getInput();
  // scale(scale(x, a), b) == scale(x, a*b).
  if (auto producer = getInput().getDefiningOp<ScaleOp>()) {
    getInputMutable().assign(producer.getInput());
    setFactor(APFloat(factor * producer.getFactor().convertToDouble()));
    return getResult();
  }
  return {};
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getType().getRank();
  if (getAxis() < -rank || getAxis() >= rank)
    return emitOpError("axis ")
           << getAxis() << " is out of range for rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// Transformer ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  TG_DIAG(EmbeddingOp)
  return pushInferred(inferEmbedding(tensorTypeOf(adaptor.getTable()),
                                     tensorTypeOf(adaptor.getIndices()), diag),
                      inferred);
}

LogicalResult RMSNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  TG_DIAG(RMSNormOp)
  return pushInferred(inferNorm(tensorTypeOf(adaptor.getInput()),
                                tensorTypeOf(adaptor.getWeight()),
                                RankedTensorType(), diag),
                      inferred);
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  TG_DIAG(LayerNormOp)
  return pushInferred(inferNorm(tensorTypeOf(adaptor.getInput()),
                                tensorTypeOf(adaptor.getWeight()),
                                tensorTypeOf(adaptor.getBias()), diag),
                      inferred);
}

LogicalResult RopeOp::verify() {
  RankedTensorType type = getType();
  if (type.getRank() != 4)
    return emitOpError("input must be [B, S, H, D], got rank ")
           << type.getRank();
  int64_t D = type.getDimSize(3);
  if (std::optional<int64_t> rotated = getRotaryDims()) {
    if (*rotated < 2 || *rotated > D || *rotated % 2 != 0)
      return emitOpError("rotary_dims must be even and in [2, ")
             << D << "], got " << *rotated;
  } else if (D % 2 != 0) {
    return emitOpError("head dimension must be even, got ") << D;
  }
  if (getTheta().convertToDouble() <= 0.0)
    return emitOpError("theta must be positive");
  if (getPositions() && !getMaxPosition())
    return emitOpError("positions need max_position (the tables' length)");
  if (!getPositions() && getMaxPosition())
    return emitOpError("max_position without positions");
  if (getPositions()) {
    auto positions = llvm::cast<RankedTensorType>(getPositions().getType());
    if (positions.getRank() != 2 ||
        positions.getDimSize(0) != type.getDimSize(0) ||
        positions.getDimSize(1) != type.getDimSize(1))
      return emitOpError("positions must be [")
             << type.getDimSize(0) << ", " << type.getDimSize(1)
             << "] (one per token), got " << positions;
  }
  if (std::optional<ArrayRef<double>> freqs = getFrequencies()) {
    if (static_cast<int64_t>(freqs->size()) * 2 != getRotatedDims())
      return emitOpError("frequencies must hold one value per pair (")
             << getRotatedDims() / 2 << "), got " << freqs->size();
    for (double f : *freqs)
      if (!(f > 0.0) || !std::isfinite(f))
        return emitOpError("frequencies must be positive and finite, got ")
               << f;
  }
  return success();
}

int64_t RopeOp::getRotatedDims() {
  return getRotaryDims().value_or(getType().getDimSize(3));
}

SmallVector<double> RopeOp::getInverseFrequencies() {
  if (std::optional<ArrayRef<double>> freqs = getFrequencies())
    return SmallVector<double>(*freqs);
  int64_t R = getRotatedDims();
  double theta = getTheta().convertToDouble();
  SmallVector<double> result;
  for (int64_t i = 0; i < R / 2; ++i)
    result.push_back(std::pow(theta, -2.0 * i / R));
  return result;
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  TG_DIAG(AttentionOp)
  RankedTensorType query = tensorTypeOf(adaptor.getQuery());
  if (failed(pushInferred(inferAttention(query, tensorTypeOf(adaptor.getKey()),
                                         tensorTypeOf(adaptor.getValue()),
                                         adaptor.getCausal(), diag,
                                         adaptor.getPositions() != nullptr),
                          inferred)))
    return failure();
  inferred.push_back(attentionLogSumExpType(query));
  return success();
}

/// A soft cap is a positive, finite bound.
LogicalResult mlir::tg::verifySoftcap(Operation *op,
                                      std::optional<APFloat> softcap) {
  if (softcap) {
    double cap = softcap->convertToDouble();
    if (!(cap > 0.0) || !std::isfinite(cap))
      return op->emitOpError("softcap must be positive and finite, got ")
             << cap;
  }
  return success();
}

/// A window narrows the causal mask: there is none to narrow without it.
LogicalResult mlir::tg::verifyMaskAndCap(Operation *op, bool causal,
                                         std::optional<uint64_t> window,
                                         std::optional<APFloat> softcap) {
  if (window && !causal)
    return op->emitOpError("window needs causal (a window of the last ")
           << *window << " keys narrows the causal mask)";
  return verifySoftcap(op, softcap);
}

LogicalResult CrossEntropyOp::verify() {
  return verifySoftcap(getOperation(), getSoftcap());
}

LogicalResult LinearCrossEntropyOp::verify() {
  return verifySoftcap(getOperation(), getSoftcap());
}

/// Positions are one per query token: `[B, S]`.
static LogicalResult verifyPositions(Operation *op, Value positions,
                                     RankedTensorType tokens) {
  if (!positions)
    return success();
  auto type = llvm::cast<RankedTensorType>(positions.getType());
  if (type.getRank() != 2 || type.getDimSize(0) != tokens.getDimSize(0) ||
      type.getDimSize(1) != tokens.getDimSize(1))
    return op->emitOpError("positions must be [")
           << tokens.getDimSize(0) << ", " << tokens.getDimSize(1)
           << "] (one per token), got " << type;
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyPositions(getOperation(), getPositions(),
                             getQuery().getType())))
    return failure();
  return verifyMaskAndCap(getOperation(), getCausal(), getWindow(),
                          getSoftcap());
}

LogicalResult CacheUpdateOp::verify() {
  RankedTensorType cache = getCache().getType(), rows = getRows().getType();
  if (cache.getRank() != 4 || rows.getRank() != 4)
    return emitOpError("cache and rows must be [B, L, H, D] and [B, S, H, D]");
  if (cache.getElementType() != rows.getElementType())
    return emitOpError("cache and rows differ in element type: ")
           << cache.getElementType() << " and " << rows.getElementType();
  if (cache.getDimSize(0) != rows.getDimSize(0) ||
      cache.getDimSize(2) != rows.getDimSize(2) ||
      cache.getDimSize(3) != rows.getDimSize(3))
    return emitOpError("rows ") << rows << " do not fit cache " << cache;
  if (rows.getDimSize(1) > cache.getDimSize(1))
    return emitOpError("writes ") << rows.getDimSize(1)
                                  << " rows into a cache of "
                                  << cache.getDimSize(1);
  return verifyPositions(getOperation(), getPositions(), rows);
}

double AttentionOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 /
         std::sqrt(static_cast<double>(getQuery().getType().getDimSize(3)));
}

LogicalResult CrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  TG_DIAG(CrossEntropyOp)
  return pushInferred(inferCrossEntropy(tensorTypeOf(adaptor.getLogits()),
                                        tensorTypeOf(adaptor.getTargets()),
                                        diag),
                      inferred);
}

LogicalResult LinearCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  TG_DIAG(LinearCrossEntropyOp)
  FailureOr<RankedTensorType> logits = inferLinear(
      tensorTypeOf(adaptor.getInput()), tensorTypeOf(adaptor.getWeight()),
      tensorTypeOf(adaptor.getBias()), diag);
  if (failed(logits))
    return failure();
  if (failed(pushInferred(
          inferCrossEntropy(*logits, tensorTypeOf(adaptor.getTargets()), diag),
          inferred)))
    return failure();
  // The gradients have their operands' types.
  inferred.push_back(adaptor.getInput().getType());
  inferred.push_back(adaptor.getWeight().getType());
  if (adaptor.getBias())
    inferred.push_back(adaptor.getBias().getType());
  return success();
}

#define GET_OP_CLASSES
#include "tgc/Dialect/TG/IR/TGOps.cpp.inc"
