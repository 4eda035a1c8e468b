//===- MatrixVectorProducts.cpp - products of a few rows, without packing -===//
//
// A product of a few rows with a transposed matrix, x · Wᵀ where W is
// [N, K] (a linear layer's weight, as generation's one-token steps run
// them), is lowered by tg → linalg as a transpose of W into a copy, then a
// matmul, whose tiles pack that copy again: for a few rows the copies are
// the whole cost, each weight read and written twice to be used once. Here
// such a product reads W as it is stored: out[m, n] += Σ_k x[m, k] · W[n, k]
// as a linalg.generic with n outermost (tgc-parallelize-loops splits it
// across the threads) and the K reduction innermost and contiguous in both
// operands (tgc-reassociate-reductions lets LLVM run it in vector lanes).
// Narrow (bf16, f16) operands are widened as they are read.
//
// The bf16 products of more rows (AMX, AVX512-BF16) pack W themselves:
// readNarrowTransposedOperands drops their transposed copy and gives the
// matmul maps that read W as [N, K].
//
//===----------------------------------------------------------------------===//

#include "MatmulStages.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;

namespace tgc::cpu::matmuls {

/// The transpose whose output is `matmul`'s right-hand operand: a buffer
/// of its own (its alloc, the transpose [1, 0] of W, the product, its
/// dealloc) that nothing writes W between; null otherwise.
static linalg::TransposeOp transposedCopyRead(linalg::MatmulOp matmul) {
  Value rhs = matmul.getInputs()[1];
  linalg::TransposeOp transpose;
  for (Operation *user : rhs.getUsers()) {
    if (user == matmul || llvm::isa<memref::DeallocOp>(user))
      continue;
    auto t = llvm::dyn_cast<linalg::TransposeOp>(user);
    if (!t || t.getInit() != rhs || transpose)
      return {};
    transpose = t;
  }
  if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0} ||
      transpose->getBlock() != matmul->getBlock() ||
      !transpose->isBeforeInBlock(matmul) ||
      !llvm::isa_and_nonnull<memref::AllocOp>(rhs.getDefiningOp()))
    return {};
  // Nothing between them may write W.
  for (Operation *op = transpose->getNextNode(); op != matmul;
       op = op->getNextNode())
    for (OpOperand &operand : op->getOpOperands())
      if (operand.get() == transpose.getInput() &&
          llvm::isa<linalg::LinalgOp>(op) &&
          llvm::cast<linalg::LinalgOp>(op).isDpsInit(&operand))
        return {};
  return transpose;
}

/// The transposed copy `matmul` read, erased with its buffer.
static void eraseTransposedCopy(linalg::TransposeOp transpose) {
  Value copy = transpose.getInit();
  transpose.erase();
  Operation *alloc = copy.getDefiningOp();
  for (Operation *user : llvm::make_early_inc_range(copy.getUsers()))
    user->erase(); // its dealloc
  alloc->erase();
}

/// The matmuls (default maps, f32 output) that `accepts` and whose
/// right-hand operand is a transposed copy (transposedCopyRead), with the
/// transposes.
static SmallVector<std::pair<linalg::MatmulOp, linalg::TransposeOp>>
transposedCopyReads(ModuleOp module,
                    llvm::function_ref<bool(linalg::MatmulOp)> accepts) {
  SmallVector<std::pair<linalg::MatmulOp, linalg::TransposeOp>> products;
  module.walk([&](linalg::MatmulOp matmul) {
    if (!matmul.hasPureBufferSemantics() || matmul.hasUserDefinedMaps() ||
        !getElementTypeOrSelf(matmul.getOutputs()[0].getType()).isF32() ||
        !accepts(matmul))
      return;
    if (linalg::TransposeOp transpose = transposedCopyRead(matmul))
      products.push_back({matmul, transpose});
  });
  return products;
}

void readTransposedOperandsInPlace(ModuleOp module, int64_t maxRows) {
  auto products = transposedCopyReads(module, [&](linalg::MatmulOp matmul) {
    auto lhs = llvm::dyn_cast<MemRefType>(matmul.getInputs()[0].getType());
    Type rhsElement = getElementTypeOrSelf(matmul.getInputs()[1].getType());
    // f32 operands, or narrow ones of one type (bf16 weights: widened in
    // registers as they are read).
    return lhs && lhs.hasStaticShape() && lhs.getDimSize(0) <= maxRows &&
           lhs.getElementType() == rhsElement &&
           (rhsElement.isF32() || rhsElement.isBF16() || rhsElement.isF16());
  });
  for (auto [matmul, transpose] : products) {
    OpBuilder b(matmul);
    MLIRContext *ctx = b.getContext();
    // Loops (n, m, k): x[m, k], W[n, k], out[m, n].
    AffineExpr n = b.getAffineDimExpr(0), m = b.getAffineDimExpr(1),
               k = b.getAffineDimExpr(2);
    SmallVector<AffineMap> maps{AffineMap::get(3, 0, {m, k}, ctx),
                                AffineMap::get(3, 0, {n, k}, ctx),
                                AffineMap::get(3, 0, {m, n}, ctx)};
    linalg::GenericOp::create(
        b, matmul.getLoc(),
        ValueRange{matmul.getInputs()[0], transpose.getInput()},
        ValueRange{matmul.getOutputs()[0]}, maps,
        SmallVector<utils::IteratorType>{utils::IteratorType::parallel,
                                         utils::IteratorType::parallel,
                                         utils::IteratorType::reduction},
        [](OpBuilder &nb, Location loc, ValueRange args) {
          Type f32 = args[2].getType();
          auto widened = [&](Value v) -> Value {
            return v.getType() == f32 ? v
                                      : arith::ExtFOp::create(nb, loc, f32, v);
          };
          Value product = arith::MulFOp::create(nb, loc, widened(args[0]),
                                                widened(args[1]));
          linalg::YieldOp::create(
              nb, loc, ValueRange{arith::AddFOp::create(nb, loc, args[2],
                                                        product)});
        });
    matmul.erase();
    eraseTransposedCopy(transpose);
  }
}

void readNarrowTransposedOperands(ModuleOp module) {
  auto products = transposedCopyReads(module, [](linalg::MatmulOp matmul) {
    return getElementTypeOrSelf(matmul.getInputs()[0].getType()).isBF16() &&
           getElementTypeOrSelf(matmul.getInputs()[1].getType()).isBF16();
  });
  for (auto [matmul, transpose] : products) {
    OpBuilder b(matmul);
    MLIRContext *ctx = b.getContext();
    AffineExpr m = b.getAffineDimExpr(0), n = b.getAffineDimExpr(1),
               k = b.getAffineDimExpr(2);
    SmallVector<Attribute> maps{
        AffineMapAttr::get(AffineMap::get(3, 0, {m, k}, ctx)),
        AffineMapAttr::get(AffineMap::get(3, 0, {n, k}, ctx)),
        AffineMapAttr::get(AffineMap::get(3, 0, {m, n}, ctx))};
    auto product = linalg::MatmulOp::create(
        b, matmul.getLoc(),
        ValueRange{matmul.getInputs()[0], transpose.getInput()},
        ValueRange{matmul.getOutputs()[0]});
    product.setIndexingMapsAttr(b.getArrayAttr(maps));
    product->setDiscardableAttrs(matmul->getDiscardableAttrDictionary());
    matmul.erase();
    eraseTransposedCopy(transpose);
  }
}

} // namespace tgc::cpu::matmuls
