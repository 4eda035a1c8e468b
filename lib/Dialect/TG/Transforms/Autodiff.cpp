//===- Autodiff.cpp - reverse-mode automatic differentiation --------------===//
//
// @forward → @train_step: copy the forward ops, then sweep them in reverse,
// building each op's vector-Jacobian product through GradientOpInterface.
// See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGAUTODIFFPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

bool isFloatTensor(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  return type && llvm::isa<FloatType>(type.getElementType());
}

/// Whether `arg` is a parameter that trains: marked tg.param and not
/// tg.frozen (a frozen parameter is a constant to the reverse graph).
bool isTrainableParam(func::FuncOp func, BlockArgument arg) {
  return func.getArgAttr(arg.getArgNumber(), TGDialect::kParamAttrName) &&
         !func.getArgAttr(arg.getArgNumber(), TGDialect::kFrozenAttrName);
}

/// Values that depend on a trainable parameter: the only ones that need
/// gradients.
llvm::DenseSet<Value> computeActiveValues(func::FuncOp func) {
  llvm::DenseSet<Value> active;
  for (BlockArgument arg : func.getArguments())
    if (isTrainableParam(func, arg))
      active.insert(arg);
  func.walk([&](Operation *op) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return active.contains(v); }))
      return;
    for (Value result : op->getResults())
      if (isFloatTensor(result))
        active.insert(result);
  });
  return active;
}

Value zerosLike(OpBuilder &b, Location loc, Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(tensor,
                             b.getFloatAttr(tensor.getElementType(), 0.0)));
}

struct TGAutodiffPass : tg::impl::TGAutodiffPassBase<TGAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
    if (!forward) {
      module.emitError() << "tg-autodiff: no function @" << forwardName
                         << " to differentiate";
      return signalPassFailure();
    }
    if (module.lookupSymbol(trainStepName)) {
      forward.emitError() << "tg-autodiff: @" << trainStepName
                          << " already exists";
      return signalPassFailure();
    }
    if (failed(differentiate(forward)))
      return signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp forward) {
    if (!forward.getBody().hasOneBlock())
      return forward.emitError("tg-autodiff: @")
             << forward.getName() << " must have a single block";
    auto results = forward.getResultTypes();
    auto lossType = results.empty()
                        ? RankedTensorType()
                        : llvm::dyn_cast<RankedTensorType>(results[0]);
    if (!lossType || lossType.getRank() != 0 ||
        !llvm::isa<FloatType>(lossType.getElementType()))
      return forward.emitError("tg-autodiff: @")
             << forward.getName()
             << " must return a 0-d floating-point loss first";
    // Further results are values reported beside the loss (tg.output), not
    // differentiated: the load-balancing loss of a mixture of experts.
    for (unsigned r = 1; r < results.size(); ++r)
      if (!forward.getResultAttr(r, TGDialect::kOutputAttrName))
        return forward.emitError("tg-autodiff: @")
               << forward.getName() << " result #" << r
               << " after the loss needs a tg.output name";

    // The train step starts as a copy of the forward function.
    OpBuilder b(forward);
    b.setInsertionPointAfter(forward);
    auto step = llvm::cast<func::FuncOp>(b.clone(*forward));
    step.setName(trainStepName);
    Block &body = step.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    Value loss = ret.getOperand(0);

    SmallVector<BlockArgument> params;
    for (BlockArgument arg : step.getArguments())
      if (isTrainableParam(step, arg))
        params.push_back(arg);

    llvm::DenseSet<Value> active = computeActiveValues(step);
    llvm::DenseMap<Value, Value> adjoints;
    b.setInsertionPoint(ret);
    if (lossScale) {
      // Loss scaling: d(loss) is the input `loss_scale`, so every gradient
      // comes out multiplied by it.
      unsigned index = step.getNumArguments();
      if (failed(step.insertArgument(
              index, lossType,
              b.getDictionaryAttr(b.getNamedAttr(
                  TGDialect::kInputAttrName, b.getStringAttr("loss_scale"))),
              step.getLoc())))
        return failure();
      if (active.contains(loss))
        adjoints[loss] = step.getArgument(index);
    } else if (active.contains(loss)) {
      adjoints[loss] = ConstantOp::create(
          b, ret.getLoc(),
          DenseElementsAttr::get(
              lossType, b.getFloatAttr(lossType.getElementType(), 1.0)));
    }

    // Reverse sweep over the forward ops (a snapshot: rules append ops).
    SmallVector<Operation *> forwardOps;
    for (Operation &op : body.without_terminator())
      forwardOps.push_back(&op);
    for (Operation *op : llvm::reverse(forwardOps)) {
      SmallVector<Value> resultGrads;
      bool anyResultGrad = false;
      for (Value result : op->getResults()) {
        resultGrads.push_back(adjoints.lookup(result));
        anyResultGrad |= static_cast<bool>(resultGrads.back());
      }
      if (!anyResultGrad)
        continue;
      SmallVector<bool> needsGrad;
      for (Value operand : op->getOperands())
        needsGrad.push_back(active.contains(operand));
      if (llvm::none_of(needsGrad, [](bool n) { return n; }))
        continue;

      auto rule = llvm::dyn_cast<GradientOpInterface>(op);
      if (!rule)
        return op->emitError("tg-autodiff: no gradient rule for '")
               << op->getName() << "'";
      SmallVector<Value> operandGrads;
      if (failed(rule.buildGradient(b, resultGrads, needsGrad, operandGrads)))
        return failure();
      if (operandGrads.size() != op->getNumOperands())
        return op->emitError("tg-autodiff: gradient rule returned ")
               << operandGrads.size() << " gradients for "
               << op->getNumOperands() << " operands";
      for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
        if (!grad)
          continue;
        if (grad.getType() != operand.getType())
          return op->emitError("tg-autodiff: gradient rule produced ")
                 << grad.getType() << " for an operand of type "
                 << operand.getType();
        Value &adjoint = adjoints[operand];
        adjoint =
            adjoint ? AddOp::create(b, op->getLoc(), adjoint, grad).getResult()
                    : grad;
      }
    }

    // Results: the loss, then one gradient per trainable parameter, in
    // order.
    SmallVector<Value> newResults{loss};
    SmallVector<Type> resultTypes{loss.getType()};
    SmallVector<DictionaryAttr> resultAttrs{b.getDictionaryAttr(
        b.getNamedAttr(TGDialect::kOutputAttrName, b.getStringAttr("loss")))};
    for (unsigned r = 1; r < ret.getNumOperands(); ++r) {
      newResults.push_back(ret.getOperand(r));
      resultTypes.push_back(ret.getOperand(r).getType());
      resultAttrs.push_back(step.getResultAttrDict(r));
    }
    for (BlockArgument param : params) {
      Value grad = adjoints.lookup(param);
      if (!grad)
        grad = zerosLike(b, ret.getLoc(), param.getType());
      newResults.push_back(grad);
      resultTypes.push_back(grad.getType());
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          TGDialect::kGradAttrName,
          step.getArgAttr(param.getArgNumber(), TGDialect::kParamAttrName))));
    }
    func::ReturnOp::create(b, ret.getLoc(), newResults);
    ret.erase();
    step.setFunctionType(
        b.getFunctionType(step.getArgumentTypes(), resultTypes));
    step.setAllResultAttrs(resultAttrs);
    return success();
  }
};

} // namespace
