//===- SummedProducts.cpp - sums of products accumulated ------------------===//
//
// A sum of products' results (a tensor's gradient from several readers)
// becomes products accumulating into one output.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

#include "tgc/Conversion/Passes.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/IR/TrainStep.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace mlir::tg::fusion {

/// The product behind `input` of a sum: a `linalg.matmul` of the default
/// layout (or a transposed-operand one) whose output starts from a zero
/// fill and whose result is read only by the sum, directly or through one
/// expand_shape read only by the sum. Null otherwise.
static linalg::MatmulOp summedProduct(Value input, linalg::GenericOp sum) {
  Value value = input;
  if (auto expand = input.getDefiningOp<tensor::ExpandShapeOp>()) {
    if (!expand->hasOneUse())
      return {};
    value = expand.getSrc();
  }
  auto product = value.getDefiningOp<linalg::MatmulOp>();
  if (!product || !product.hasPureTensorSemantics() || !value.hasOneUse() ||
      product->getBlock() != sum->getBlock())
    return {};
  auto fill = product.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.getInputs()[0], m_AnyZeroFloat())
             ? product
             : linalg::MatmulOp();
}

/// Whether `sum` is an elementwise loop whose result is the plain sum of
/// its inputs, each read once, over identity maps.
static bool isPlainSum(linalg::GenericOp sum) {
  if (!sum.hasPureTensorSemantics() || sum.getNumDpsInits() != 1 ||
      sum.getNumReductionLoops() != 0 ||
      !llvm::all_of(sum.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Block *body = sum.getBody();
  int64_t inputs = sum.getNumDpsInputs();
  if (inputs < 2 || static_cast<int64_t>(body->getOperations().size()) !=
                        inputs) // inputs − 1 additions and the yield
    return false;
  for (Operation &op : body->without_terminator())
    if (!isa<arith::AddFOp>(op))
      return false;
  for (int64_t i = 0; i < inputs; ++i)
    if (!body->getArgument(i).hasOneUse())
      return false;
  return body->getArgument(inputs).use_empty();
}

/// A sum of products' results (the gradient of a tensor read by several
/// projections: dX = dQ·Wq + dK·Wk + dV·Wv) as one accumulation: each
/// product after the first accumulates into the previous one's output
/// instead of into a zero fill, and the sum's loop goes. The products stay
/// where they are (each later one reads the earlier's result, which
/// dominates it); the sum's result becomes the last product's (reshaped as
/// the sum read it).
void accumulateSummedProducts(func::FuncOp func) {
  SmallVector<linalg::GenericOp> sums;
  func.walk([&](linalg::GenericOp op) {
    if (isPlainSum(op))
      sums.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  for (linalg::GenericOp sum : sums) {
    SmallVector<linalg::MatmulOp> products;
    for (Value input : sum.getDpsInputs())
      if (linalg::MatmulOp product = summedProduct(input, sum))
        products.push_back(product);
    if (products.size() != sum.getDpsInputs().size() ||
        llvm::any_of(products, [&](linalg::MatmulOp p) {
          return p.getResultTypes() != products.front().getResultTypes();
        }))
      continue;
    llvm::sort(products, [](linalg::MatmulOp a, linalg::MatmulOp b) {
      return a->isBeforeInBlock(b);
    });
    Value acc = products.front().getResult(0);
    for (linalg::MatmulOp product : llvm::drop_begin(products)) {
      Operation *fill = product.getDpsInits()[0].getDefiningOp();
      rewriter.modifyOpInPlace(
          product, [&] { product.getDpsInitsMutable()[0].set(acc); });
      if (fill->use_empty())
        rewriter.eraseOp(fill);
      acc = product.getResult(0);
    }
    rewriter.setInsertionPoint(sum);
    Value result = acc;
    auto type = llvm::cast<RankedTensorType>(sum.getResultTypes()[0]);
    if (result.getType() != type) {
      // The sum read the products through expand_shapes of one form.
      auto expand =
          sum.getDpsInputs()[0].getDefiningOp<tensor::ExpandShapeOp>();
      result = tensor::ExpandShapeOp::create(rewriter, sum.getLoc(), type, acc,
                                             expand.getReassociationIndices());
    }
    rewriter.replaceOp(sum, result);
  }
}

} // namespace mlir::tg::fusion
