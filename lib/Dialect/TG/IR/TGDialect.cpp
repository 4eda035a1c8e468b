//===- TGDialect.cpp - tg dialect registration and argument attributes ----===//

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/IR/TypeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tg;

#include "tgc/Dialect/TG/IR/TGOpsDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tgc/Dialect/TG/IR/TGAttrs.cpp.inc"

void TGDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tgc/Dialect/TG/IR/TGOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tgc/Dialect/TG/IR/TGAttrs.cpp.inc"
      >();
}

LogicalResult
AttentionTilingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            int64_t tile, int64_t taskTile, bool) {
  if (tile < 0 || taskTile < 0)
    return emitError() << "attention tiles must not be negative, got tile = "
                       << tile << ", task_tile = " << taskTile;
  return success();
}

LogicalResult
RowChunksAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t rows, int64_t tailRows) {
  if (rows < 1 || tailRows < 1 || tailRows > rows)
    return emitError() << "row chunks need 1 <= tail_rows <= rows, got rows = "
                       << rows << ", tail_rows = " << tailRows;
  return success();
}

LogicalResult
MatmulTilingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t tileM, int64_t tileN, int64_t tileK,
                         int64_t registerM, int64_t registerN, bool) {
  if (tileM < 1 || tileN < 1 || tileK < 1 || registerM < 1 || registerN < 1)
    return emitError() << "matmul tiles must be positive, got " << tileM
                       << " x " << tileN << " x " << tileK << " (registers "
                       << registerM << " x " << registerN << ")";
  return success();
}

LogicalResult RowTasksAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t rows) {
  if (rows < 1)
    return emitError() << "row tasks need at least one row each, got rows = "
                       << rows;
  return success();
}

Operation *TGDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

namespace {
/// Checks a naming attribute on argument or result `index` of a function:
/// the name must be a non-empty string and the value a ranked tensor
/// (parameters and their state floating point).
LogicalResult verifyNameAttribute(Operation *op, StringRef what, unsigned index,
                                  NamedAttribute attribute, Type type) {
  StringRef name = attribute.getName().strref();
  auto str = llvm::dyn_cast<StringAttr>(attribute.getValue());
  if (!str || str.getValue().empty())
    return op->emitError() << "'" << name << "' on " << what << " #" << index
                           << " must be a non-empty string";
  // After bufferization the values are memrefs, after LLVM lowering
  // pointers: the names stay, only tensors and memrefs are checked.
  auto shaped = llvm::dyn_cast_if_present<ShapedType>(type);
  if (!shaped)
    return success();
  if (!shaped.hasRank())
    return op->emitError() << what << " #" << index << " marked '" << name
                           << "' must be ranked, got " << type;
  if (failed(checkElementCount(shaped, [&] {
        return op->emitError()
               << what << " #" << index << " marked '" << name << "': ";
      })))
    return failure();
  bool mustBeFloat = name == TGDialect::kParamAttrName ||
                     name == TGDialect::kStateAttrName ||
                     name == TGDialect::kGradAttrName;
  if (mustBeFloat && !llvm::isa<FloatType>(shaped.getElementType()))
    return op->emitError() << "'" << name << "' value '" << str.getValue()
                           << "' (" << what << " #" << index
                           << ") must have a floating-point element type, got "
                           << shaped.getElementType();
  return success();
}

/// Two tensor arguments of one function must not carry the same `tg.param`,
/// `tg.input` or `tg.state` name: the name is how parameters, their
/// gradients and optimizer state find each other. Once bufferized, an
/// updated parameter's out-parameter shares its name on purpose, so memrefs
/// are not checked. Reports at the later argument.
LogicalResult verifyUniqueArgumentName(Operation *op, unsigned argIndex,
                                       NamedAttribute attribute, Type type) {
  auto isNaming = [](StringRef name) {
    return name == TGDialect::kParamAttrName ||
           name == TGDialect::kInputAttrName ||
           name == TGDialect::kStateAttrName;
  };
  if (!isNaming(attribute.getName().strref()))
    return success();
  auto func = llvm::dyn_cast<FunctionOpInterface>(op);
  if (!func || !llvm::isa_and_present<TensorType>(type))
    return success();
  // The whole function's names are checked once, at its first named
  // tensor argument: a scan of the earlier arguments at each one would be
  // quadratic (a model of 30,000 layers has 300,000 parameters).
  ArrayRef<Type> argTypes = func.getArgumentTypes();
  auto namesOf = [&](unsigned i) {
    SmallVector<NamedAttribute> names;
    if (llvm::isa<TensorType>(argTypes[i]))
      for (NamedAttribute a : func.getArgAttrs(i))
        if (isNaming(a.getName().strref()))
          names.push_back(a);
    return names;
  };
  for (unsigned i = 0; i < argIndex && i < argTypes.size(); ++i)
    if (!namesOf(i).empty())
      return success();
  llvm::DenseMap<std::pair<Attribute, Attribute>, unsigned> first;
  for (unsigned j = argIndex; j < argTypes.size(); ++j) {
    for (NamedAttribute a : namesOf(j)) {
      auto [it, inserted] = first.try_emplace({a.getName(), a.getValue()}, j);
      if (inserted)
        continue;
      unsigned i = it->second;
      Region &body = func.getFunctionBody();
      bool hasArgs = !body.empty() && j < body.getNumArguments();
      InFlightDiagnostic diag = hasArgs
                                    ? mlir::emitError(body.getArgument(j).getLoc())
                                    : op->emitError();
      diag << "argument #" << j << " of @" << func.getName() << " repeats the '"
           << a.getName().strref() << "' name "
           << llvm::cast<StringAttr>(a.getValue()) << " of argument #" << i;
      if (hasArgs)
        diag.attachNote(body.getArgument(i).getLoc())
            << "argument #" << i << " is named here";
      return diag;
    }
  }
  return success();
}
} // namespace

/// `tg.param`, `tg.input` and `tg.state` name function arguments; once
/// results become out-parameters (bufferization), result names move to
/// arguments too.
/// `tg.shard_of` names the parameter whose optimizer state a ZeRO-1 state
/// argument or result holds a shard of.
static LogicalResult verifyShardOf(Operation *op, NamedAttribute attribute) {
  auto name = llvm::dyn_cast<StringAttr>(attribute.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'" << attribute.getName().strref()
                           << "' must name a parameter, got "
                           << attribute.getValue();
  return success();
}

/// `tg.sharded` gives the whole type of a ZeRO-3 parameter shard.
static LogicalResult verifySharded(Operation *op, NamedAttribute attribute) {
  auto type = llvm::dyn_cast<TypeAttr>(attribute.getValue());
  auto tensor =
      type ? llvm::dyn_cast<RankedTensorType>(type.getValue()) : nullptr;
  if (!tensor || !tensor.hasStaticShape())
    return op->emitError() << "'" << attribute.getName().strref()
                           << "' must be a statically shaped tensor type, got "
                           << attribute.getValue();
  return success();
}

LogicalResult TGDialect::verifyRegionArgAttribute(Operation *op,
                                                  unsigned regionIndex,
                                                  unsigned argIndex,
                                                  NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  if (name == kShardOfAttrName)
    return verifyShardOf(op, attribute);
  if (name == kShardedAttrName)
    return verifySharded(op, attribute);
  if (name == kFrozenAttrName) {
    auto func = llvm::dyn_cast<FunctionOpInterface>(op);
    if (!llvm::isa<UnitAttr>(attribute.getValue()) || !func ||
        !func.getArgAttr(argIndex, kParamAttrName))
      return op->emitError() << "'" << name << "' on argument #" << argIndex
                             << " must be a unit attribute beside 'tg.param'";
    return success();
  }
  if (name != kParamAttrName && name != kInputAttrName &&
      name != kStateAttrName && name != kOutputAttrName &&
      name != kGradAttrName)
    return op->emitError() << "unknown tg argument attribute '" << name << "'";
  Region &region = op->getRegion(regionIndex);
  Type type = !region.empty() && argIndex < region.getNumArguments()
                  ? region.getArgument(argIndex).getType()
                  : Type();
  if (failed(verifyNameAttribute(op, "argument", argIndex, attribute, type)))
    return failure();
  return verifyUniqueArgumentName(op, argIndex, attribute, type);
}

/// `tg.output`, `tg.grad`, `tg.param` and `tg.state` name function results.
LogicalResult TGDialect::verifyRegionResultAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned resultIndex,
                                                     NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  if (name == kShardOfAttrName)
    return verifyShardOf(op, attribute);
  if (name == kShardedAttrName)
    return verifySharded(op, attribute);
  if (name != kOutputAttrName && name != kGradAttrName &&
      name != kParamAttrName && name != kStateAttrName)
    return op->emitError() << "unknown tg result attribute '" << name << "'";
  Type type;
  if (auto func = llvm::dyn_cast<FunctionOpInterface>(op))
    if (resultIndex < func.getNumResults())
      type = func.getResultTypes()[resultIndex];
  return verifyNameAttribute(op, "result", resultIndex, attribute, type);
}

#include "tgc/Dialect/TG/IR/TGInterfaces.cpp.inc"

/// Op attributes: `tg.layer` (a non-negative integer), `tg.remat` ("save" or
/// "recompute"), `tg.recomputed` (unit).
LogicalResult TGDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attribute) {
  StringRef name = attribute.getName().strref();
  Attribute value = attribute.getValue();
  if (name == kLayerAttrName) {
    auto layer = llvm::dyn_cast<IntegerAttr>(value);
    if (!layer || layer.getValue().isNegative())
      return op->emitError()
             << "'" << name << "' must be a non-negative integer, got "
             << value;
    return success();
  }
  if (name == kRematAttrName) {
    auto str = llvm::dyn_cast<StringAttr>(value);
    if (!str || (str.getValue() != "save" && str.getValue() != "recompute"))
      return op->emitError()
             << "'" << name << "' must be \"save\" or \"recompute\", got "
             << value;
    return success();
  }
  if (name == kSavedCopyAttrName) {
    if (!llvm::isa<UnitAttr>(value) || !llvm::isa<CastOp>(op))
      return op->emitError()
             << "'" << name << "' must be a unit attribute of a tg.cast";
    return success();
  }
  if (name == kRecomputedAttrName) {
    if (!llvm::isa<UnitAttr>(value))
      return op->emitError() << "'" << name << "' must be a unit attribute";
    return success();
  }
  if (name == kTilingAttrName) {
    auto expect = [&](bool matches, StringRef kind) -> LogicalResult {
      if (matches)
        return success();
      return op->emitError() << "'" << name << "' of this op must be a " << kind
                             << ", got " << value;
    };
    if (llvm::isa<AttentionOp, AttentionGradOp>(op))
      return expect(llvm::isa<AttentionTilingAttr>(value),
                    "#tg.attention_tiling");
    if (llvm::isa<RMSNormOp, RMSNormGradOp, LayerNormOp, LayerNormGradOp>(op))
      return expect(llvm::isa<RowTasksAttr>(value), "#tg.row_tasks");
    if (llvm::isa<GroupedMatmulOp, GroupedWeightGradOp>(op))
      return expect(llvm::isa<RowChunksAttr>(value), "#tg.row_chunks");
    // The CPU schedule's products (by name: the dialect links no linalg).
    if (op->getName().getStringRef() == "linalg.matmul" ||
        op->getName().getStringRef() == "linalg.batch_matmul")
      return expect(llvm::isa<MatmulTilingAttr>(value), "#tg.matmul_tiling");
    return op->emitError() << "'" << name
                           << "' applies to attention, norm, expert product "
                              "and matmul ops only";
  }
  if (name == kProcessesAttrName) {
    auto processes = llvm::dyn_cast<IntegerAttr>(value);
    if (!processes || processes.getValue().getSExtValue() < 1)
      return op->emitError()
             << "'" << name << "' must be a positive integer, got " << value;
    return success();
  }
  if (name == kGatherPrefetchAttrName) {
    // tg-shard-parameters' record: {planned, depth, transfer_seconds,
    // exposed_seconds[, gather_bandwidth, compute_rate]}.
    auto record = llvm::dyn_cast<DictionaryAttr>(value);
    bool valid = record &&
                 llvm::isa_and_nonnull<BoolAttr>(record.get("planned")) &&
                 llvm::isa_and_nonnull<IntegerAttr>(record.get("depth"));
    for (StringRef key : {"transfer_seconds", "exposed_seconds",
                          "gather_bandwidth", "compute_rate"})
      if (valid && record.get(key))
        valid = llvm::isa<FloatAttr>(record.get(key));
    if (!valid)
      return op->emitError()
             << "'" << name
             << "' must be a dictionary with a bool 'planned', an integer "
                "'depth' and float seconds and rates, got "
             << value;
    return success();
  }
  return op->emitError() << "unknown tg op attribute '" << name << "'";
}
