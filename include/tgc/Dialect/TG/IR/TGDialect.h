//===- TGDialect.h - tg dialect declaration ---------------------*- C++ -*-===//
#ifndef TGC_DIALECT_TG_IR_TGDIALECT_H
#define TGC_DIALECT_TG_IR_TGDIALECT_H

#include "mlir/IR/Dialect.h"

#include "tgc/Dialect/TG/IR/TGOpsDialect.h.inc"

#endif // TGC_DIALECT_TG_IR_TGDIALECT_H
