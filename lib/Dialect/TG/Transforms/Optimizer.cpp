//===- Optimizer.cpp - the optimizer update inside @train_step ------------===//
//
// Appends gradient clipping and an SGD or AdamW update to the train step so
// that one compiled call performs a whole training step. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGOPTIMIZERPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct TGOptimizerPass : tg::impl::TGOptimizerPassBase<TGOptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>(trainStepName);
    if (!step) {
      module.emitError() << "tg-optimizer: no function @" << trainStepName
                         << " (run tg-autodiff first)";
      return signalPassFailure();
    }
    if (failed(appendUpdate(step)))
      return signalPassFailure();
  }

  LogicalResult appendUpdate(func::FuncOp step) {
    MLIRContext *ctx = step.getContext();
    OpBuilder b(ctx);
    Block &body = step.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());

    // Trainable parameters (arguments) and their gradients (results),
    // matched by name. Frozen parameters (tg.frozen) have no gradient and
    // get no state, no update and no part in the norm.
    SmallVector<unsigned> paramArgs;
    for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
      if (step.getArgAttr(i, TGDialect::kParamAttrName) &&
          !step.getArgAttr(i, TGDialect::kFrozenAttrName))
        paramArgs.push_back(i);
    llvm::StringMap<unsigned> gradResult;
    unsigned outputs = 0; // the loss and the values reported beside it
    for (unsigned i = 0, e = step.getNumResults(); i < e; ++i)
      if (auto name =
              step.getResultAttrOfType<StringAttr>(i, TGDialect::kGradAttrName))
        gradResult[name.getValue()] = i;
      else if (i == outputs &&
               step.getResultAttr(i, TGDialect::kOutputAttrName))
        ++outputs;
    if (outputs == 0 || step.getNumResults() != paramArgs.size() + outputs ||
        gradResult.size() != paramArgs.size() ||
        llvm::any_of(paramArgs, [&](unsigned p) {
          return !gradResult.contains(
              step.getArgAttrOfType<StringAttr>(p, TGDialect::kParamAttrName)
                  .getValue());
        }))
      return step.emitError("tg-optimizer: @")
             << step.getName()
             << " must return (loss, tg.output values, one tg.grad per "
                "tg.param that is not "
                "tg.frozen); run tg-autodiff first and tg-optimizer once";

    auto f32Scalar = RankedTensorType::get({}, b.getF32Type());
    bool adamw = optimizer == OptimizerKind::AdamW;
    bool withMomentum = !adamw && momentum > 0.0;
    unsigned statesPerParam = adamw ? 2 : (withMomentum ? 1 : 0);

    // State arguments go right after the parameters (frozen ones too),
    // grouped by kind.
    unsigned insertAt = 0;
    for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
      if (step.getArgAttr(i, TGDialect::kParamAttrName))
        insertAt = i + 1;
    SmallVector<std::pair<StringRef, unsigned>> stateKinds;
    if (adamw)
      stateKinds = {{"exp_avg", 0}, {"exp_avg_sq", 1}};
    else if (withMomentum)
      stateKinds = {{"momentum_buffer", 0}};
    SmallVector<SmallVector<BlockArgument>> states(stateKinds.size());
    Location loc = step.getLoc();
    // All at once: one insertion per argument would rebuild the function
    // type and its attribute arrays each time (quadratic in the parameters
    // of a model with thousands of experts).
    SmallVector<unsigned> indices;
    SmallVector<Type> stateTypes;
    SmallVector<DictionaryAttr> newStateAttrs;
    for (auto [kindIndex, kind] : llvm::enumerate(stateKinds)) {
      for (unsigned p : paramArgs) {
        auto paramType =
            llvm::cast<RankedTensorType>(step.getArgument(p).getType());
        stateTypes.push_back(adamw ? paramType.clone(b.getF32Type())
                                   : paramType);
        auto paramName =
            step.getArgAttrOfType<StringAttr>(p, TGDialect::kParamAttrName);
        newStateAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
            TGDialect::kStateAttrName,
            b.getStringAttr(kind.first + "." + paramName.getValue()))));
        indices.push_back(insertAt);
      }
    }
    if (!indices.empty() &&
        failed(step.insertArguments(indices, stateTypes, newStateAttrs,
                                    SmallVector<Location>(indices.size(),
                                                          loc))))
      return failure();
    for (unsigned k = 0; k < stateKinds.size(); ++k)
      for (unsigned i = 0; i < paramArgs.size(); ++i)
        states[k].push_back(
            step.getArgument(insertAt + k * paramArgs.size() + i));
    auto inputAttr = [&](StringRef name) {
      return b.getDictionaryAttr(
          b.getNamedAttr(TGDialect::kInputAttrName, b.getStringAttr(name)));
    };
    unsigned numArgs = step.getNumArguments();
    if (failed(step.insertArgument(numArgs, f32Scalar, inputAttr("lr"), loc)) ||
        failed(step.insertArgument(numArgs + 1, f32Scalar, inputAttr("step"),
                                   loc)))
      return failure();
    Value lr = step.getArgument(numArgs),
          stepCount = step.getArgument(numArgs + 1);

    // Loss scaling: the `loss_scale` input (tg-autodiff) becomes state,
    // with a growth tracker beside it.
    Value lossScale, growthTracker;
    if (lossScaling != LossScaling::None) {
      for (BlockArgument arg : step.getArguments())
        if (auto name = step.getArgAttrOfType<StringAttr>(
                arg.getArgNumber(), TGDialect::kInputAttrName);
            name && name.getValue() == "loss_scale")
          lossScale = arg;
      if (!lossScale)
        return step.emitError("tg-optimizer: loss scaling needs the "
                              "`loss_scale` input of tg-autodiff "
                              "loss-scale=true");
      unsigned index = llvm::cast<BlockArgument>(lossScale).getArgNumber();
      step.setArgAttrs(index, b.getDictionaryAttr(b.getNamedAttr(
                                  TGDialect::kStateAttrName,
                                  b.getStringAttr("loss_scale"))));
      if (failed(step.insertArgument(
              index + 1, f32Scalar,
              b.getDictionaryAttr(
                  b.getNamedAttr(TGDialect::kStateAttrName,
                                 b.getStringAttr("loss_scale_growth_tracker"))),
              loc)))
        return failure();
      growthTracker = step.getArgument(index + 1);
    }

    // Global norm (always reported) and clipping.
    b.setInsertionPoint(ret);
    SmallVector<Value> grads;
    for (unsigned p : paramArgs) {
      auto name =
          step.getArgAttrOfType<StringAttr>(p, TGDialect::kParamAttrName);
      grads.push_back(ret.getOperand(gradResult.lookup(name.getValue())));
    }
    SmallVector<Value> rawGrads(grads);
    // One sum of squares per gradient, so that each can run as soon as its
    // gradient is complete (tg-schedule-updates).
    SmallVector<Value> sums;
    for (Value g : grads)
      sums.push_back(SumSquaresOp::create(b, g.getLoc(), g));
    Value norm = GlobalNormOp::create(b, loc, sums);
    // With loss scaling the norm is of scaled gradients: unscaled, and a
    // step whose norm is not finite (an overflow) is skipped.
    Value skip, newLossScale, newGrowthTracker, unscale;
    if (lossScale) {
      auto update = LossScaleUpdateOp::create(
          b, loc, lossScale, growthTracker, norm,
          b.getI64IntegerAttr(lossScaling == LossScaling::Dynamic
                                  ? lossScaleGrowthInterval
                                  : 0));
      unscale = update.getInverseScale();
      skip = update.getSkip();
      newLossScale = update.getNewScale();
      newGrowthTracker = update.getNewGrowthTracker();
      norm = MulOp::create(b, loc, norm, unscale);
    } else if (guardUpdates) {
      skip = NotFiniteOp::create(b, loc, norm);
    }
    Value multiplier = unscale;
    if (gradClip > 0.0) {
      Value factor =
          ClipFactorOp::create(b, loc, norm, b.getF64FloatAttr(gradClip));
      multiplier =
          unscale ? MulOp::create(b, loc, factor, unscale).getResult() : factor;
    }
    if (multiplier)
      for (Value &g : grads) {
        if (!llvm::cast<RankedTensorType>(g.getType()).getElementType().isF32())
          return step.emitError("tg-optimizer: gradient clipping and loss "
                                "scaling need f32 gradients, got ")
                 << g.getType();
        g = MulOp::create(b, loc, g, multiplier);
      }

    // One update per parameter.
    SmallVector<Value> newParams, newStates[2];
    SmallVector<DictionaryAttr> paramAttrs, stateAttrs[2];
    for (auto [i, p] : llvm::enumerate(paramArgs)) {
      Value param = step.getArgument(p), grad = grads[i];
      Location l = grad.getLoc();
      if (adamw) {
        auto update = AdamWUpdateOp::create(
            b, l, param, grad, states[0][i], states[1][i], lr, stepCount, skip,
            b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
            b.getF64FloatAttr(eps), b.getF64FloatAttr(weightDecay));
        newParams.push_back(update.getNewParam());
        newStates[0].push_back(update.getNewExpAvg());
        newStates[1].push_back(update.getNewExpAvgSq());
      } else if (withMomentum) {
        auto update = SGDMomentumUpdateOp::create(
            b, l, param, grad, states[0][i], lr, stepCount, skip,
            b.getF64FloatAttr(momentum), b.getF64FloatAttr(weightDecay));
        newParams.push_back(update.getNewParam());
        newStates[0].push_back(update.getNewMomentumBuffer());
      } else {
        newParams.push_back(SGDUpdateOp::create(
            b, l, param, grad, lr, skip, b.getF64FloatAttr(weightDecay)));
      }
      paramAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(TGDialect::kParamAttrName,
                         step.getArgAttr(p, TGDialect::kParamAttrName))));
      for (unsigned k = 0; k < statesPerParam; ++k)
        stateAttrs[k].push_back(b.getDictionaryAttr(
            b.getNamedAttr(TGDialect::kStateAttrName,
                           step.getArgAttr(states[k][i].getArgNumber(),
                                           TGDialect::kStateAttrName))));
    }

    auto output = [&](StringRef name) {
      return b.getDictionaryAttr(
          b.getNamedAttr(TGDialect::kOutputAttrName, b.getStringAttr(name)));
    };
    SmallVector<Value> results{ret.getOperand(0), norm};
    SmallVector<DictionaryAttr> resultAttrs{output("loss"),
                                            output("grad_norm")};
    // Values reported beside the loss (tg-autodiff keeps them after it).
    for (unsigned r = 1; r < ret.getNumOperands(); ++r)
      if (auto name = step.getResultAttrOfType<StringAttr>(
              r, TGDialect::kOutputAttrName)) {
        results.push_back(ret.getOperand(r));
        resultAttrs.push_back(output(name.getValue()));
      }
    // With a guard (loss scaling's or guard-updates), each gradient's
    // (scaled) sum of squares, so that the runtime can name the tensors that
    // are not finite.
    if (skip)
      for (auto [p, sum] : llvm::zip(paramArgs, sums)) {
        results.push_back(sum);
        resultAttrs.push_back(output(
            ("grad_sumsq." +
             step.getArgAttrOfType<StringAttr>(p, TGDialect::kParamAttrName)
                 .getValue())
                .str()));
      }
    llvm::append_range(results, newParams);
    llvm::append_range(resultAttrs, paramAttrs);
    for (unsigned k = 0; k < statesPerParam; ++k) {
      llvm::append_range(results, newStates[k]);
      llvm::append_range(resultAttrs, stateAttrs[k]);
    }
    if (lossScale) {
      for (auto [value, name] :
           {std::pair(newLossScale, "loss_scale"),
            std::pair(newGrowthTracker, "loss_scale_growth_tracker")}) {
        results.push_back(value);
        resultAttrs.push_back(b.getDictionaryAttr(
            b.getNamedAttr(TGDialect::kStateAttrName, b.getStringAttr(name))));
      }
    }
    if (returnGradients) {
      for (auto [p, g] : llvm::zip(paramArgs, rawGrads)) {
        if (unscale)
          g = MulOp::create(b, loc, g, unscale);
        results.push_back(g);
        resultAttrs.push_back(b.getDictionaryAttr(
            b.getNamedAttr(TGDialect::kGradAttrName,
                           step.getArgAttr(p, TGDialect::kParamAttrName))));
      }
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    step.setFunctionType(FunctionType::get(ctx, step.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    step.setAllResultAttrs(resultAttrs);
    return success();
  }
};

} // namespace
