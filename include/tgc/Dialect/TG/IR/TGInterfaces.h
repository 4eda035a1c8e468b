//===- TGInterfaces.h - interfaces of tg ops --------------------*- C++ -*-===//
#ifndef TGC_DIALECT_TG_IR_TGINTERFACES_H
#define TGC_DIALECT_TG_IR_TGINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include <cstdint>

namespace mlir::tg {
/// Work of executing one op as its semantics are documented (CostOpInterface).
struct OpCost {
  /// Multiplications inside matrix products (as in a hand count of
  /// backprop); attention's products count every score it computes.
  int64_t matmulMultiplications = 0;
  /// Floating-point operations of everything: 2 per multiply-add, and a
  /// documented per-element count for elementwise, norm and loss ops.
  int64_t flops = 0;
};
} // namespace mlir::tg

#include "tgc/Dialect/TG/IR/TGInterfaces.h.inc"

#endif // TGC_DIALECT_TG_IR_TGINTERFACES_H
