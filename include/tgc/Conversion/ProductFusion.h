//===- ProductFusion.h - loops a target fuses into a product's tiles -*- C++
//-*-===//
//
// A target that tiles matrix products can do two neighbours of a product
// inside each output tile, while the tile is in cache, instead of as
// passes over whole buffers: the fill that zeroes the product's output
// before it accumulates, and an elementwise loop right after it that reads
// the product (a residual add, the sum of a tensor's gradients). The CPU
// schedule does both; `tgc stats` asks the target and counts them as part
// of the product. Both are found on the bufferized step by these
// functions, so the count and the schedule agree.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_CONVERSION_PRODUCTFUSION_H
#define TGC_CONVERSION_PRODUCTFUSION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace tgc {

/// The buffer a view is a view of (any other value: itself).
inline mlir::Value rootBuffer(mlir::Value v) {
  auto memref = llvm::dyn_cast<mlir::MemrefValue>(v);
  return memref ? mlir::memref::skipViewLikeOps(memref) : v;
}

/// Whether `op` (or an op nested in it) uses the buffer `root` or a view
/// of it.
inline bool touchesBuffer(mlir::Operation *op, mlir::Value root) {
  bool touches = false;
  op->walk([&](mlir::Operation *inner) {
    for (mlir::Value operand : inner->getOperands())
      if (rootBuffer(operand) == root)
        touches = true;
  });
  return touches;
}

/// The linalg.fill of a constant (on buffers) that initialises `product`'s
/// output just before it: it writes the very buffer the product accumulates
/// into, and no op between the two (at most a few, in the same block) reads
/// or writes that buffer or any view of it.
inline mlir::linalg::FillOp
findAccumulatorInit(mlir::linalg::LinalgOp product) {
  constexpr int kMaxOpsBetween = 16;
  if (!product.hasPureBufferSemantics() || product.getNumDpsInits() != 1)
    return {};
  mlir::Value acc = product.getDpsInits()[0];
  mlir::Value root = rootBuffer(acc);
  int seen = 0;
  for (mlir::Operation *op = product->getPrevNode();
       op && seen < kMaxOpsBetween; op = op->getPrevNode(), ++seen) {
    auto fill = llvm::dyn_cast<mlir::linalg::FillOp>(op);
    if (fill && fill.hasPureBufferSemantics() && fill.getOutputs()[0] == acc &&
        mlir::matchPattern(fill.getInputs()[0], mlir::m_Constant()))
      return fill;
    if (touchesBuffer(op, root))
      return {};
  }
  return {};
}

/// Whether `v` holds the M x N elements of a 2-D product's output in the
/// same order: a row-major static buffer whose last dimension is N (an
/// expand_shape of one is row-major too), so that an output tile's rows and
/// columns are a rectangle of it once collapsed to [M, N].
inline bool isRowMajorLike(mlir::Value v, int64_t m, int64_t n) {
  auto type = llvm::dyn_cast<mlir::MemRefType>(v.getType());
  return type && type.hasStaticShape() && type.getRank() >= 1 &&
         type.getShape().back() == n && type.getNumElements() == m * n &&
         type.getLayout().isIdentity();
}

/// Whether `v` exists before `op` (same block), or is a fresh buffer or a
/// reshape of one made between `op` and its reader, which can move before
/// `op`.
inline bool availableBefore(mlir::Value v, mlir::Operation *op) {
  mlir::Operation *def = v.getDefiningOp();
  if (!def)
    return true; // an argument of `op`'s block or of one around it
  if (def->getBlock() != op->getBlock()) {
    mlir::Operation *around = def->getBlock()->findAncestorOpInBlock(*op);
    return around && def->isBeforeInBlock(around);
  }
  if (def->isBeforeInBlock(op))
    return true;
  if (llvm::isa<mlir::memref::AllocOp>(def))
    return def->getNumOperands() == 0;
  if (llvm::isa<mlir::memref::ExpandShapeOp, mlir::memref::CollapseShapeOp>(
          def))
    return availableBefore(def->getOperand(0), op);
  return false;
}

/// The elementwise loop that reads `product`'s output right after it, as
/// its epilogue: the next op touching the output buffer is a
/// linalg.generic with only parallel loops and identity maps, no index
/// ops, whose operands all hold M x N elements in the output's order
/// (isRowMajorLike), which reads the output (directly or through one
/// expand_shape) and is its last reader, and writes a buffer the product
/// does not read. No op between the two (at most a few) touches any of the
/// loop's buffers, whose buffers exist before the product or are allocated
/// (or reshaped) in between and can move before it. 2-D products with a
/// whole buffer as output only.
inline mlir::linalg::GenericOp findEpilogue(mlir::linalg::LinalgOp product) {
  constexpr int kMaxOpsBetween = 16;
  if (!product.hasPureBufferSemantics() || product.getNumDpsInits() != 1 ||
      !llvm::isa<mlir::linalg::MatmulOp>(product))
    return {};
  mlir::Value acc = product.getDpsInits()[0];
  auto accType = llvm::dyn_cast<mlir::MemRefType>(acc.getType());
  if (!accType || !accType.hasStaticShape() || accType.getRank() != 2 ||
      !accType.getLayout().isIdentity() ||
      !acc.getDefiningOp<mlir::memref::AllocOp>())
    return {};
  int64_t m = accType.getDimSize(0), n = accType.getDimSize(1);
  mlir::linalg::GenericOp epilogue;
  int seen = 0;
  // Views and allocations touch no memory.
  auto movesNoData = [](mlir::Operation *op) {
    return llvm::isa<mlir::ViewLikeOpInterface, mlir::memref::AllocOp>(op);
  };
  for (mlir::Operation *op = product->getNextNode();
       op && seen < kMaxOpsBetween; op = op->getNextNode(), ++seen) {
    if (movesNoData(op) || !touchesBuffer(op, acc))
      continue;
    epilogue = llvm::dyn_cast<mlir::linalg::GenericOp>(op);
    break;
  }
  if (!epilogue || !epilogue.hasPureBufferSemantics() ||
      epilogue.getNumDpsInits() != 1 || epilogue.getNumReductionLoops() != 0 ||
      !llvm::all_of(epilogue.getIndexingMapsArray(),
                    [](mlir::AffineMap map) { return map.isIdentity(); }) ||
      !epilogue.getBody()->getOps<mlir::linalg::IndexOp>().empty())
    return {};
  bool readsAcc = false;
  for (mlir::OpOperand &operand : epilogue->getOpOperands()) {
    mlir::Value v = operand.get();
    if (!isRowMajorLike(v, m, n))
      return {};
    if (rootBuffer(v) == acc) {
      // Read as an input, directly or through one expand_shape (another view
      // of the output, e.g. a collapse of a one-row product, is not fused).
      auto expand = v.getDefiningOp<mlir::memref::ExpandShapeOp>();
      if (epilogue.isDpsInit(&operand) ||
          (v != acc && (!expand || expand.getSrc() != acc)))
        return {};
      readsAcc = true;
    }
  }
  mlir::Value out = rootBuffer(epilogue.getDpsInits()[0]);
  if (!readsAcc || out == acc ||
      !llvm::all_of(epilogue->getOperands(),
                    [&](mlir::Value v) {
                      return v == acc || rootBuffer(v) == acc ||
                             availableBefore(v, product);
                    }) ||
      llvm::any_of(product.getDpsInputs(),
                   [&](mlir::Value in) { return rootBuffer(in) == out; }))
    return {};
  // Nothing between touches the loop's buffers, and nothing after it reads
  // the product's output.
  for (mlir::Operation *op = product->getNextNode(); op != epilogue;
       op = op->getNextNode())
    for (mlir::Value v : epilogue->getOperands())
      if (!movesNoData(op) && touchesBuffer(op, rootBuffer(v)))
        return {};
  for (mlir::Operation *op = epilogue->getNextNode(); op;
       op = op->getNextNode())
    if (!movesNoData(op) && touchesBuffer(op, acc) &&
        !llvm::isa<mlir::memref::DeallocOp>(op))
      return {};
  return epilogue;
}

} // namespace tgc

#endif // TGC_CONVERSION_PRODUCTFUSION_H
