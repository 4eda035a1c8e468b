//===- TGOps.h - tg dialect operations --------------------------*- C++ -*-===//
#ifndef TGC_DIALECT_TG_IR_TGOPS_H
#define TGC_DIALECT_TG_IR_TGOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGInterfaces.h"

namespace mlir::tg {
/// Verifies that every operand and result type of `op` has fewer than 2^63
/// elements and bytes (see checkElementCount).
LogicalResult verifyElementCounts(Operation *op);

/// Op trait: operands and results have element counts that fit in int64.
template <typename ConcreteType>
class ElementCountFits
    : public OpTrait::TraitBase<ConcreteType, ElementCountFits> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return verifyElementCounts(op);
  }
};
} // namespace mlir::tg

#define GET_OP_CLASSES
#include "tgc/Dialect/TG/IR/TGOps.h.inc"

#endif // TGC_DIALECT_TG_IR_TGOPS_H
