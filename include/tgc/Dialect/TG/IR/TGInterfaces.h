//===- TGInterfaces.h - interfaces of tg ops --------------------*- C++ -*-===//
#ifndef TGC_DIALECT_TG_IR_TGINTERFACES_H
#define TGC_DIALECT_TG_IR_TGINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "tgc/Dialect/TG/IR/TGInterfaces.h.inc"

#endif // TGC_DIALECT_TG_IR_TGINTERFACES_H
