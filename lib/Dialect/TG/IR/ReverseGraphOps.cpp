//===- ReverseGraphOps.cpp - verifiers of the reverse graph's tg ops -----===//
//
// The gradient ops autodiff emits (pad, embedding_grad, the activations',
// norms', attention's and the loss's gradients) and the optimizer update:
// their verifiers reuse the forward ops' shape rules (TypeInference.h).
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/IR/TypeInference.h"

using namespace mlir;
using namespace mlir::tg;

namespace {
/// Emitter for an op's verifier, in the form the shape rules take.
struct VerifierDiagnostics {
  Operation *op;
  InFlightDiagnostic operator()() const { return op->emitOpError(); }
};
} // namespace

LogicalResult PadOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= in.getRank() || in.getRank() != out.getRank())
    return emitOpError("axis ")
           << axis << " is out of range for rank " << in.getRank();
  if (getLow() < 0 || getHigh() < 0)
    return emitOpError("padding must be non-negative");
  SmallVector<int64_t> shape(in.getShape());
  shape[axis] += getLow() + getHigh();
  if (out != in.clone(shape))
    return emitOpError("result must be ") << in.clone(shape) << ", got " << out;
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType out = getType(), grad = getGrad().getType();
  VerifierDiagnostics diag{getOperation()};
  FailureOr<RankedTensorType> expected =
      inferEmbedding(out, getIndices().getType(), ErrorEmitter(diag));
  if (failed(expected))
    return failure();
  if (*expected != grad)
    return emitOpError("grad must be ")
           << *expected << " (indices shape + [D]), got " << grad;
  return success();
}

LogicalResult GeluGradOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  int64_t rank = getType().getRank();
  if (getAxis() < -rank || getAxis() >= rank)
    return emitOpError("axis ")
           << getAxis() << " is out of range for rank " << rank;
  return success();
}

LogicalResult RMSNormGradOp::verify() {
  VerifierDiagnostics diag{getOperation()};
  return inferNorm(getInput().getType(), getWeight().getType(),
                   RankedTensorType(), ErrorEmitter(diag));
}

LogicalResult LayerNormGradOp::verify() {
  VerifierDiagnostics diag{getOperation()};
  return inferNorm(getInput().getType(), getWeight().getType(),
                   RankedTensorType(), ErrorEmitter(diag));
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyMaskAndCap(getOperation(), getCausal(), getWindow(),
                              getSoftcap())))
    return failure();
  VerifierDiagnostics diag{getOperation()};
  if (failed(inferAttention(getQuery().getType(), getKey().getType(),
                            getValue().getType(), getCausal(),
                            ErrorEmitter(diag))))
    return failure();
  RankedTensorType expected = attentionLogSumExpType(getQuery().getType());
  if (getLogsumexp().getType() != expected)
    return emitOpError("logsumexp must be ")
           << expected << " (one value per query row), got "
           << getLogsumexp().getType();
  return success();
}

double AttentionGradOp::getScaleOrDefault() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToDouble();
  return 1.0 /
         std::sqrt(static_cast<double>(getQuery().getType().getDimSize(3)));
}

LogicalResult CrossEntropyGradOp::verify() {
  VerifierDiagnostics diag{getOperation()};
  if (getGrad().getType().getElementType() !=
      getLogits().getType().getElementType())
    return emitOpError("grad and logits must have the same element type");
  if (failed(verifySoftcap(getOperation(), getSoftcap())))
    return failure();
  return inferCrossEntropy(getLogits().getType(), getTargets().getType(),
                           ErrorEmitter(diag));
}

LogicalResult AdamWUpdateOp::verify() {
  auto param = llvm::cast<RankedTensorType>(getParam().getType());
  auto moment = llvm::cast<RankedTensorType>(getExpAvg().getType());
  if (param.getShape() != moment.getShape())
    return emitOpError("moments must have the parameter's shape ")
           << param << ", got " << moment;
  if (!moment.getElementType().isF32())
    return emitOpError("moments must be f32, got ") << moment.getElementType();
  return success();
}
