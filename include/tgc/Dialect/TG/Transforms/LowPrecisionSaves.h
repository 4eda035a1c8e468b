//===- LowPrecisionSaves.h - saved activations in bf16/f16 ------*- C++ -*-===//
//
// The C++ side of `tg-low-precision-saves`, shared with `tg-remat` (whose
// plans count the bytes the saved activations will have), `tgc stats` and
// `tg-mixed-precision` (the low-precision types).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_LOWPRECISIONSAVES_H
#define TGC_DIALECT_TG_TRANSFORMS_LOWPRECISIONSAVES_H

#include "tgc/Dialect/TG/Transforms/TrainingOptions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tg {

/// The element type of `type`; null for LowPrecisionType::None.
Type getLowPrecisionType(MLIRContext *context, LowPrecisionType type);

/// Whether `result`, of a forward op, may be kept in low precision when the
/// reverse graph reads it: a ranked f32 tensor of rank >= 1 that its op does
/// not keep at full precision (GradientOpInterface).
bool isStorableInLowPrecision(OpResult result);

/// Keeps every f32 forward value of `step` that its reverse graph reads as a
/// copy in `lowElement` (bf16 or f16) made in the forward pass, widened back
/// before its first reader in the reverse graph.
void keepSavedActivationsIn(func::FuncOp step, Type lowElement);

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_LOWPRECISIONSAVES_H
