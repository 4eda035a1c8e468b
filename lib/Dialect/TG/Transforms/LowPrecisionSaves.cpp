//===- LowPrecisionSaves.cpp - tg-low-precision-saves ---------------------===//
//
// Keeps the saved activations of a mixed-precision train step in bf16/f16:
// a low-precision copy made in the forward pass, widened back in the reverse
// graph; see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/Transforms/LowPrecisionSaves.h"
#include "tgc/Dialect/TG/Analysis/TrainingStats.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGLOWPRECISIONSAVESPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

Type mlir::tg::getLowPrecisionType(MLIRContext *context,
                                   LowPrecisionType type) {
  switch (type) {
  case LowPrecisionType::None:
    return {};
  case LowPrecisionType::BF16:
    return BFloat16Type::get(context);
  case LowPrecisionType::F16:
    return Float16Type::get(context);
  }
  llvm_unreachable("unknown low-precision type");
}

bool mlir::tg::isStorableInLowPrecision(OpResult result) {
  Operation *op = result.getOwner();
  auto type = llvm::dyn_cast<RankedTensorType>(result.getType());
  if (!type || !type.getElementType().isF32() || type.getRank() == 0)
    return false;
  if (op->hasTrait<OpTrait::ConstantLike>() || op->hasTrait<OptimizerStep>())
    return false;
  auto differentiable = llvm::dyn_cast<GradientOpInterface>(op);
  return !differentiable ||
         !differentiable.keepsResultAtFullPrecision(result.getResultNumber());
}

namespace {

/// The existing low-precision copy of `value`: the value it widens exactly,
/// a forward cast of it to `lowElement`, or such a cast of a reshape of it
/// (then the copy has the reshape's shape).
Value existingLowCopy(Value value, Type lowElement,
                      const llvm::SetVector<Operation *> &forward) {
  auto isLow = [&](Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getElementType() ==
           lowElement;
  };
  if (auto widening = value.getDefiningOp<CastOp>())
    if (isLow(widening.getInput()))
      return widening.getInput();
  auto forwardLowCast = [&](Value v) -> Value {
    for (Operation *user : v.getUsers())
      if (auto cast = llvm::dyn_cast<CastOp>(user);
          cast && isLow(cast) && forward.contains(cast))
        return cast;
    return {};
  };
  if (Value cast = forwardLowCast(value))
    return cast;
  for (Operation *user : value.getUsers())
    if (auto reshape = llvm::dyn_cast<ReshapeOp>(user);
        reshape && forward.contains(reshape))
      if (Value cast = forwardLowCast(reshape))
        return cast;
  return {};
}

struct TGLowPrecisionSavesPass
    : mlir::tg::impl::TGLowPrecisionSavesPassBase<TGLowPrecisionSavesPass> {
  using Base::Base;

  void runOnOperation() override {
    Type low = getLowPrecisionType(&getContext(), elementType);
    if (!low)
      return;
    getOperation().walk([&](func::FuncOp func) {
      if (!func.isExternal())
        keepSavedActivationsIn(func, low);
    });
  }
};

} // namespace

void mlir::tg::keepSavedActivationsIn(func::FuncOp func, Type lowElement) {
  llvm::SetVector<Operation *> forward = getForwardOps(func);
  if (forward.empty())
    return;
  Operation *terminator = func.getBody().front().getTerminator();
  OpBuilder b(func.getContext());
  // A copy: the loop adds the new casts to `forward`.
  SmallVector<Operation *> forwardOps(forward.begin(), forward.end());
  // Values the reverse graph reads at f32 anyway (arguments, and results
  // kept at full precision): views of them cost nothing to keep.
  llvm::DenseSet<Value> keptAtF32;
  auto isKeptAtF32 = [&](Value v) {
    return llvm::isa<BlockArgument>(v) || keptAtF32.contains(v);
  };
  for (Operation *op : forwardOps)
    for (OpResult result : op->getResults()) {
      if (!isStorableInLowPrecision(result) ||
          (op->hasTrait<StorageView>() && isKeptAtF32(op->getOperand(0)))) {
        keptAtF32.insert(result);
        continue;
      }
      // Reverse-graph readers, in block order.
      SmallVector<OpOperand *> backwardUses;
      bool returned = false;
      for (OpOperand &use : result.getUses()) {
        if (use.getOwner() == terminator)
          returned = true;
        else if (!forward.contains(use.getOwner()))
          backwardUses.push_back(&use);
      }
      if (returned)
        keptAtF32.insert(result);
      if (returned || backwardUses.empty())
        continue;
      llvm::sort(backwardUses, [](OpOperand *a, OpOperand *b) {
        return a->getOwner()->isBeforeInBlock(b->getOwner());
      });

      auto type = llvm::cast<RankedTensorType>(result.getType());
      auto lowType = type.clone(lowElement);
      Value copy = existingLowCopy(result, lowElement, forward);
      if (!copy) {
        b.setInsertionPointAfter(op);
        auto cast = CastOp::create(b, op->getLoc(), lowType, result);
        cast->setAttr(TGDialect::kSavedCopyAttrName, b.getUnitAttr());
        if (Attribute layer = op->getAttr(TGDialect::kLayerAttrName))
          cast->setAttr(TGDialect::kLayerAttrName, layer);
        forward.insert(cast);
        copy = cast;
      }
      b.setInsertionPoint(backwardUses.front()->getOwner());
      auto copyType = llvm::cast<RankedTensorType>(copy.getType());
      Value widened = CastOp::create(
          b, op->getLoc(), copyType.clone(type.getElementType()), copy);
      if (widened.getType() != type)
        widened = ReshapeOp::create(b, op->getLoc(), type, widened);
      for (OpOperand *use : backwardUses)
        use->set(widened);
    }
}
