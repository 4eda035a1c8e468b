//===- Freeze.h - frozen parameters by name ---------------------*- C++ -*-===//
//
// The C++ side of `tg-freeze`, shared with the driver (which reports a
// pattern that freezes nothing or everything before building the step).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_FREEZE_H
#define TGC_DIALECT_TG_TRANSFORMS_FREEZE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/Error.h"

namespace mlir::tg {

/// Marks every argument of `forward` whose `tg.param` name matches `pattern`
/// as a whole (tgc::NamePattern) with `tg.frozen`. Fails, changing nothing,
/// when `pattern` is not a regular expression or matches no parameter or
/// every parameter; the message names the pattern.
llvm::Error freezeParameters(func::FuncOp forward, StringRef pattern);

} // namespace mlir::tg

#endif // TGC_DIALECT_TG_TRANSFORMS_FREEZE_H
