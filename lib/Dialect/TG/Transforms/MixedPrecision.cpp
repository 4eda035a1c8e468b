//===- MixedPrecision.cpp - tg-mixed-precision ----------------------------===//
//
// Puts the matrix products of the forward graph on low-precision operands
// with f32 accumulation; see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/LowPrecisionSaves.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGMIXEDPRECISIONPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct TGMixedPrecisionPass
    : mlir::tg::impl::TGMixedPrecisionPassBase<TGMixedPrecisionPass> {
  using Base::Base;

  void runOnOperation() override {
    Type low = getLowPrecisionType(&getContext(), elementType);
    if (!low)
      return;
    getOperation().walk([&](func::FuncOp func) { convert(func, low); });
  }

  void convert(func::FuncOp func, Type low) {
    // One cast per value, placed before its first product, shared by the
    // later ones (a tied weight, the Q/K/V projections of one input).
    DenseMap<Value, Value> casts;
    OpBuilder b(func.getContext());
    auto lowered = [&](Operation *user, Value v) -> Value {
      auto &cast = casts[v];
      if (!cast) {
        b.setInsertionPoint(user);
        auto type = llvm::cast<RankedTensorType>(v.getType());
        auto op = CastOp::create(b, user->getLoc(), type.clone(low), v);
        // The cast belongs to its product's layer (remat's checkpoints).
        if (Attribute layer = user->getAttr(TGDialect::kLayerAttrName))
          op->setAttr(TGDialect::kLayerAttrName, layer);
        // A copy of an argument (a weight, the input batch) is remade where
        // the backward pass needs it, from the f32 value that is alive
        // anyway: saving it would keep a bf16 copy of every weight alive
        // from its forward use to its backward use.
        if (llvm::isa<BlockArgument>(v))
          op->setAttr(TGDialect::kRematAttrName, b.getStringAttr("recompute"));
        cast = op;
      }
      return cast;
    };
    auto isFloat = [](Value v) {
      return llvm::isa<FloatType>(getElementTypeOrSelf(v.getType()));
    };
    func.walk([&](Operation *op) {
      // The float operands of the products (a grouped product's offsets
      // stay integers).
      if (!llvm::isa<MatmulOp, LinearOp, GroupedMatmulOp>(op))
        return;
      auto result = llvm::cast<RankedTensorType>(op->getResult(0).getType());
      if (!result.getElementType().isF32() ||
          !llvm::all_of(op->getOperands(), [&](Value v) {
            return !isFloat(v) || getElementTypeOrSelf(v.getType()).isF32();
          }))
        return;
      for (OpOperand &operand : op->getOpOperands())
        if (isFloat(operand.get()))
          operand.set(lowered(op, operand.get()));
    });
  }
};

} // namespace
