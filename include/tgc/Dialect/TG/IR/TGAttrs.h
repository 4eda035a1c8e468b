//===- TGAttrs.h - tg dialect attributes ------------------------*- C++ -*-===//
#ifndef TGC_DIALECT_TG_IR_TGATTRS_H
#define TGC_DIALECT_TG_IR_TGATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#define GET_ATTRDEF_CLASSES
#include "tgc/Dialect/TG/IR/TGAttrs.h.inc"

#endif // TGC_DIALECT_TG_IR_TGATTRS_H
