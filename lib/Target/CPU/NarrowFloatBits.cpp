//===- NarrowFloatBits.cpp - bf16/f16 memory accesses as integers ---------===//

#include "tgc/Target/CPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCNARROWFLOATBITSPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {
bool isNarrowFloat(Type type) {
  return llvm::isa<BFloat16Type, Float16Type>(getElementTypeOrSelf(type));
}

/// The integer value whose bits `v` is (`llvm.bitcast` of an integer, or
/// a vector of them, to a narrow float type); null otherwise.
Value bitsOf(Value v) {
  auto cast = v.getDefiningOp<LLVM::BitcastOp>();
  if (!cast || !isNarrowFloat(cast.getType()) ||
      !getElementTypeOrSelf(cast.getArg().getType()).isInteger(16))
    return {};
  return cast.getArg();
}

/// store (bitcast i16 → bf16) → store i16.
struct StoreBits : OpRewritePattern<LLVM::StoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LLVM::StoreOp op,
                                PatternRewriter &rewriter) const override {
    Value bits = bitsOf(op.getValue());
    if (!bits)
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.getValueMutable().assign(bits); });
    return success();
  }
};

/// A bf16 load whose readers only take its bits (bitcasts to i16) → an
/// i16 load.
struct LoadBits : OpRewritePattern<LLVM::LoadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LLVM::LoadOp op,
                                PatternRewriter &rewriter) const override {
    if (!isNarrowFloat(op.getType()) || op.getResult().use_empty())
      return failure();
    Type bitsType;
    for (Operation *user : op->getUsers()) {
      auto cast = llvm::dyn_cast<LLVM::BitcastOp>(user);
      if (!cast || !getElementTypeOrSelf(cast.getType()).isInteger(16))
        return failure();
      bitsType = cast.getType();
    }
    SmallVector<Operation *> casts(op->getUsers());
    rewriter.modifyOpInPlace(op, [&] { op.getResult().setType(bitsType); });
    for (Operation *cast : casts)
      rewriter.replaceOp(cast, op.getResult());
    return success();
  }
};

struct TGCNarrowFloatBitsPass
    : tgc::cpu::impl::TGCNarrowFloatBitsPassBase<TGCNarrowFloatBitsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<StoreBits, LoadBits>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
