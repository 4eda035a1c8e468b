//===- TGOps.h - tg dialect operations --------------------------*- C++ -*-===//
#ifndef TGC_DIALECT_TG_IR_TGOPS_H
#define TGC_DIALECT_TG_IR_TGOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tgc/Dialect/TG/IR/TGAttrs.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGInterfaces.h"

#include <optional>

namespace mlir::tg {
/// Verifies that every operand and result type of `op` has fewer than 2^63
/// elements and bytes (see checkElementCount).
LogicalResult verifyElementCounts(Operation *op);

/// A soft cap, when given, is positive and finite (attention, the loss and
/// their gradients).
LogicalResult verifySoftcap(Operation *op, std::optional<APFloat> softcap);

/// Attention's mask and cap (forward and gradient): a window only with
/// `causal`, and a valid soft cap.
LogicalResult verifyMaskAndCap(Operation *op, bool causal,
                               std::optional<uint64_t> window,
                               std::optional<APFloat> softcap);

/// Op trait: operands and results have element counts that fit in int64.
template <typename ConcreteType>
class ElementCountFits
    : public OpTrait::TraitBase<ConcreteType, ElementCountFits> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyElementCounts(op);
  }
};

/// Op trait: the result is a view of operand 0's storage (no copy); the
/// memory planner and tg-remat read this instead of a list of op kinds.
template <typename ConcreteType>
class StorageView : public OpTrait::TraitBase<ConcreteType, StorageView> {};

/// Op trait: a matrix product (recomputing it costs a product, so
/// rematerialisation only does when nothing cheaper fits).
template <typename ConcreteType>
class MatrixProduct : public OpTrait::TraitBase<ConcreteType, MatrixProduct> {};

/// Op trait: part of the optimizer step (gradient norm, clipping, updates);
/// `tgc stats` counts it under `optimizer`.
template <typename ConcreteType>
class OptimizerStep : public OpTrait::TraitBase<ConcreteType, OptimizerStep> {};

/// Op trait: computes a parameter's (and its state's) new value from the
/// old one; the runtime may run it in place (Executable.cpp checks when).
template <typename ConcreteType>
class ParameterUpdate
    : public OpTrait::TraitBase<ConcreteType, ParameterUpdate> {};

/// True for bf16 and f16, the element types of mixed-precision operands.
bool isLowPrecisionFloat(Type type);

/// Whether a product of `operand` elements may return `result` elements:
/// the same type, or f32 accumulation of bf16/f16 operands.
bool isProductResultElement(Type operand, Type result);

/// The `softcap` attribute of a tg op that has one (attention and its
/// gradient, the cross-entropies), as a double; none where it is absent.
template <typename OpTy>
std::optional<double> softcapOf(OpTy op) {
  if (std::optional<APFloat> cap = op.getSoftcap())
    return cap->convertToDouble();
  return std::nullopt;
}
} // namespace mlir::tg

#define GET_OP_CLASSES
#include "tgc/Dialect/TG/IR/TGOps.h.inc"

#endif // TGC_DIALECT_TG_IR_TGOPS_H
