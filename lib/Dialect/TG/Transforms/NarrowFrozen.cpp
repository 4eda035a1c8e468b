//===- NarrowFrozen.cpp - tg-narrow-frozen: frozen weights in bf16 --------===//
//
// Stores the frozen weight matrices that only matrix products read in a
// low-precision type, and puts those products on low-precision operands
// (accumulated in f32, as tg-mixed-precision's). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/LowPrecisionSaves.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGNARROWFROZENPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Whether `op` reads `weight` as the weight of an f32 product whose result
/// does not feed the loss (the fused LM head keeps f32 operands).
bool isNarrowableProduct(Operation *op, Value weight) {
  Value read;
  if (auto linear = dyn_cast<LinearOp>(op))
    read = linear.getWeight();
  else if (auto matmul = dyn_cast<MatmulOp>(op))
    read = matmul.getRhs();
  if (read != weight || op->getOperand(0) == weight)
    return false;
  if (!llvm::all_of(op->getOperandTypes(),
                    [](Type t) { return getElementTypeOrSelf(t).isF32(); }) ||
      !getElementTypeOrSelf(op->getResult(0).getType()).isF32())
    return false;
  return llvm::none_of(op->getUsers(), [](Operation *user) {
    return isa<CrossEntropyOp, LinearCrossEntropyOp>(user);
  });
}

/// The frozen rank-2 f32 parameter `arg` of `func`, read only as the
/// weight of narrowable products.
bool isNarrowableWeight(func::FuncOp func, BlockArgument arg) {
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  return func.getArgAttr(arg.getArgNumber(), TGDialect::kFrozenAttrName) &&
         type && type.getRank() == 2 && type.getElementType().isF32() &&
         !arg.use_empty() && llvm::all_of(arg.getUsers(), [&](Operation *u) {
           return isNarrowableProduct(u, arg);
         });
}

StringAttr paramName(func::FuncOp func, BlockArgument arg) {
  return func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                           TGDialect::kParamAttrName);
}

struct TGNarrowFrozenPass
    : mlir::tg::impl::TGNarrowFrozenPassBase<TGNarrowFrozenPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Type low = getLowPrecisionType(&getContext(), elementType);
    if (!low)
      return;
    SmallVector<std::string> names(functions.begin(), functions.end());
    if (names.empty())
      names.push_back("forward");
    SmallVector<func::FuncOp> funcs;
    for (const std::string &name : names) {
      auto func = module.lookupSymbol<func::FuncOp>(name);
      if (!func) {
        module.emitError() << "tg-narrow-frozen: no function @" << name;
        return signalPassFailure();
      }
      funcs.push_back(func);
    }
    // A parameter is narrowed in all functions or in none: they may share
    // its buffer.
    llvm::StringMap<bool> narrowable;
    for (func::FuncOp func : funcs)
      for (BlockArgument arg : func.getArguments())
        if (StringAttr name = paramName(func, arg)) {
          bool ok = isNarrowableWeight(func, arg);
          auto [it, inserted] = narrowable.try_emplace(name.getValue(), ok);
          if (!inserted)
            it->second = it->second && ok;
        }
    for (func::FuncOp func : funcs)
      narrow(func, low, narrowable);
  }

  void narrow(func::FuncOp func, Type low,
              const llvm::StringMap<bool> &narrowable) {
    OpBuilder b(func.getContext());
    // One cast per value, before its first product (Q, K and V read one
    // input).
    DenseMap<Value, Value> casts;
    auto lowered = [&](Operation *user, Value v) -> Value {
      if (getElementTypeOrSelf(v.getType()) == low)
        return v;
      Value &lowValue = casts[v];
      if (!lowValue) {
        b.setInsertionPoint(user);
        auto type = cast<RankedTensorType>(v.getType());
        auto op = CastOp::create(b, user->getLoc(), type.clone(low), v);
        if (Attribute layer = user->getAttr(TGDialect::kLayerAttrName))
          op->setAttr(TGDialect::kLayerAttrName, layer);
        lowValue = op;
      }
      return lowValue;
    };
    SmallVector<Type> argTypes(func.getArgumentTypes());
    for (BlockArgument arg : func.getArguments()) {
      StringAttr name = paramName(func, arg);
      if (!name || !narrowable.lookup(name.getValue()))
        continue;
      SmallVector<Operation *> products(arg.getUsers());
      arg.setType(cast<RankedTensorType>(arg.getType()).clone(low));
      argTypes[arg.getArgNumber()] = arg.getType();
      for (Operation *product : products)
        for (OpOperand &operand : product->getOpOperands())
          operand.set(lowered(product, operand.get()));
    }
    func.setFunctionType(
        FunctionType::get(func.getContext(), argTypes, func.getResultTypes()));
  }
};

} // namespace
