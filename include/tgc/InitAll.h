//===- InitAll.h - registration shared by every tgc tool --------*- C++ -*-===//
#ifndef TGC_INITALL_H
#define TGC_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace tgc {

/// Adds the tg dialect and every upstream dialect/extension the tgc
/// pipelines use.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers every tgc pass and pipeline with the global registry, so that
/// `tgc-opt --<pass>` and `--pass-pipeline=` find them.
void registerAllPasses();

} // namespace tgc

#endif // TGC_INITALL_H
