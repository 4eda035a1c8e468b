//===- TGDialect.cpp - tg dialect registration and argument attributes ----===//

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace mlir::tg;

#include "tgc/Dialect/TG/IR/TGOpsDialect.cpp.inc"

void TGDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tgc/Dialect/TG/IR/TGOps.cpp.inc"
      >();
}

Operation *TGDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

/// `tg.param` and `tg.input` name function arguments; the name must be a
/// non-empty string and the argument a ranked tensor.
LogicalResult TGDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  if (name != kParamAttrName && name != kInputAttrName)
    return op->emitError() << "unknown tg argument attribute '" << name << "'";
  auto str = llvm::dyn_cast<StringAttr>(attribute.getValue());
  if (!str || str.getValue().empty())
    return op->emitError() << "'" << name << "' on argument #" << argIndex
                           << " must be a non-empty string";
  Region &region = op->getRegion(regionIndex);
  if (region.empty() || argIndex >= region.getNumArguments())
    return success(); // declarations carry no block arguments to check
  Type type = region.getArgument(argIndex).getType();
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return op->emitError() << "argument #" << argIndex << " marked '" << name
                           << "' must be a ranked tensor, got " << type;
  if (name == kParamAttrName && !llvm::isa<FloatType>(tensor.getElementType()))
    return op->emitError() << "parameter '" << str.getValue()
                           << "' (argument #" << argIndex
                           << ") must have a floating-point element type, got "
                           << tensor.getElementType();
  return success();
}
