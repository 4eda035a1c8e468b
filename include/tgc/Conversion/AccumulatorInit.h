//===- AccumulatorInit.h - the fill that starts a product's sum -*- C++ -*-===//
//
// Products accumulate into their output (linalg's destination style), so
// the lowering writes zeros into it first. A target that tiles the product
// can fill each output tile right before the tile's K loop, where the tile
// is in cache, instead of passing over the whole output once more: the
// CPU schedule does, and `tgc stats` then counts no kernel for that fill.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_CONVERSION_ACCUMULATORINIT_H
#define TGC_CONVERSION_ACCUMULATORINIT_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace tgc {

/// The linalg.fill (on buffers) that initialises `product`'s output just
/// before it: it writes the very buffer the product accumulates into, and
/// no op between the two (at most a few, in the same block) reads or writes
/// that buffer or any view of it.
inline mlir::linalg::FillOp findAccumulatorInit(mlir::linalg::LinalgOp product) {
  constexpr int kMaxOpsBetween = 16;
  if (!product.hasPureBufferSemantics() || product.getNumDpsInits() != 1)
    return {};
  mlir::Value acc = product.getDpsInits()[0];
  auto rootOf = [](mlir::Value v) {
    while (auto view = v.getDefiningOp<mlir::ViewLikeOpInterface>())
      v = view.getViewSource();
    return v;
  };
  mlir::Value root = rootOf(acc);
  int seen = 0;
  for (mlir::Operation *op = product->getPrevNode(); op && seen < kMaxOpsBetween;
       op = op->getPrevNode(), ++seen) {
    auto fill = llvm::dyn_cast<mlir::linalg::FillOp>(op);
    if (fill && fill.hasPureBufferSemantics() && fill.getOutputs()[0] == acc)
      return fill;
    bool touches = false;
    op->walk([&](mlir::Operation *inner) {
      for (mlir::Value operand : inner->getOperands())
        if (rootOf(operand) == root)
          touches = true;
    });
    if (touches)
      return {};
  }
  return {};
}

} // namespace tgc

#endif // TGC_CONVERSION_ACCUMULATORINIT_H
