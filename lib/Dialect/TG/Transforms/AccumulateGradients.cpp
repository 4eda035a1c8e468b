//===- AccumulateGradients.cpp - micro-batches inside one step ------------===//
//
// Repeats @train_step's forward and reverse graph once per micro-batch, on
// row slices of larger inputs, and averages the losses and gradients. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGACCUMULATEGRADIENTSPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct TGAccumulateGradientsPass
    : tg::impl::TGAccumulateGradientsPassBase<TGAccumulateGradientsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (microBatches == 1)
      return;
    auto step = getOperation().lookupSymbol<func::FuncOp>(trainStepName);
    if (!step) {
      getOperation().emitError() << "tg-accumulate-gradients: no function @"
                                 << trainStepName << " (run tg-autodiff first)";
      return signalPassFailure();
    }
    if (microBatches < 1) {
      step.emitError("tg-accumulate-gradients: micro-batches must be at "
                     "least 1, got ")
          << microBatches;
      return signalPassFailure();
    }
    if (failed(accumulate(step)))
      return signalPassFailure();
  }

  LogicalResult accumulate(func::FuncOp step) {
    if (!step.getBody().hasOneBlock())
      return step.emitError("tg-accumulate-gradients: @")
             << trainStepName << " must have a single block";
    Block &body = step.getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    if (llvm::any_of(step.getArguments(),
                     [&](BlockArgument arg) {
                       return step.getArgAttr(arg.getArgNumber(),
                                              TGDialect::kStateAttrName);
                     }) ||
        ret.getNumOperands() == 0)
      return step.emitError("tg-accumulate-gradients: run it right after "
                            "tg-autodiff (before tg-optimizer)");

    // Inputs grow by the micro-batch count along dimension 0; the original
    // graph reads the first slice.
    OpBuilder b(step.getContext());
    b.setInsertionPointToStart(&body);
    SmallVector<std::pair<BlockArgument, int64_t>> inputs; // arg, rows
    for (BlockArgument arg : step.getArguments()) {
      if (!step.getArgAttr(arg.getArgNumber(), TGDialect::kInputAttrName))
        continue;
      auto type = llvm::cast<RankedTensorType>(arg.getType());
      // A 0-d input (tg-autodiff's loss scale) is the same for every
      // micro-batch: each copy of the graph reads it whole.
      if (type.getRank() == 0)
        continue;
      if (type.isDynamicDim(0))
        return step.emitError("tg-accumulate-gradients: input #")
               << arg.getArgNumber() << " has no batch dimension: " << type;
      SmallVector<int64_t> shape(type.getShape());
      int64_t rows = shape[0];
      shape[0] *= microBatches;
      arg.setType(type.clone(shape));
      inputs.push_back({arg, rows});
    }
    if (inputs.empty())
      return step.emitError("tg-accumulate-gradients: @")
             << trainStepName << " has no batch inputs (tg.input)";

    auto sliceOf = [&](BlockArgument arg, int64_t rows, int64_t k) {
      return SliceOp::create(b, arg.getLoc(), arg, 0, k * rows, rows)
          .getResult();
    };
    SmallVector<Operation *> original;
    for (Operation &op : body.without_terminator())
      original.push_back(&op);
    SmallVector<Value> firstSlices;
    for (auto [arg, rows] : inputs) {
      Value first = sliceOf(arg, rows, 0);
      arg.replaceAllUsesExcept(first, first.getDefiningOp());
      firstSlices.push_back(first);
    }

    // Micro-batches 1.. are copies of the graph on the next slices, each
    // after the previous one, so its activations die before the next.
    SmallVector<Value> sums(ret.getOperands());
    b.setInsertionPoint(ret);
    for (int64_t k = 1; k < microBatches; ++k) {
      IRMapping map;
      for (auto [input, first] : llvm::zip(inputs, firstSlices))
        map.map(first, sliceOf(input.first, input.second, k));
      for (Operation *op : original)
        b.clone(*op, map);
      for (auto [sum, value] : llvm::zip(sums, ret.getOperands())) {
        Value copy = map.lookupOrDefault(value);
        sum = AddOp::create(b, value.getLoc(), sum, copy);
      }
    }
    // Means over the micro-batches.
    auto scale = ConstantOp::create(
        b, step.getLoc(),
        DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                               b.getF32FloatAttr(1.0f / microBatches)));
    for (auto [index, sum] : llvm::enumerate(sums)) {
      auto type = llvm::cast<RankedTensorType>(sum.getType());
      if (!type.getElementType().isF32())
        return step.emitError("tg-accumulate-gradients: f32 results only, "
                              "got ")
               << type;
      ret.setOperand(index, MulOp::create(b, sum.getLoc(), sum, scale));
    }
    step.setFunctionType(
        b.getFunctionType(body.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }
};

} // namespace
