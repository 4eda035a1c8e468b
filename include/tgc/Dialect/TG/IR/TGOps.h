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

#define GET_OP_CLASSES
#include "tgc/Dialect/TG/IR/TGOps.h.inc"

#endif // TGC_DIALECT_TG_IR_TGOPS_H
