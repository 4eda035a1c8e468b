//===- ExpandMath.cpp - vectorisable exp/log/tanh/erf ---------------------===//

#include "tgc/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCEXPANDMATHPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {
bool isBF16(Type t) { return getElementTypeOrSelf(t).isBF16(); }

/// The type of `t`'s bits: i16 (or a vector of i16) for bf16, else `t`.
Type bitsType(Type t) {
  if (!isBF16(t))
    return t;
  Type i16 = IntegerType::get(t.getContext(), 16);
  if (auto vector = llvm::dyn_cast<VectorType>(t))
    return vector.clone(i16);
  return i16;
}

/// select on bf16 values as a select on their i16 bits: LLVM promotes a
/// bf16 select (and its NaN constant) through f32 with __truncsfbf2 calls
/// on a CPU without AVX512-BF16.
struct SelectBF16AsBits : OpRewritePattern<arith::SelectOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::SelectOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!isBF16(type))
      return failure();
    Type bits = bitsType(type);
    Location loc = op.getLoc();
    auto asBits = [&](Value v) {
      return arith::BitcastOp::create(rewriter, loc, bits, v).getResult();
    };
    Value chosen = arith::SelectOp::create(rewriter, loc, op.getCondition(),
                                           asBits(op.getTrueValue()),
                                           asBits(op.getFalseValue()));
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, type, chosen);
    return success();
  }
};

/// scf.if yielding bf16 values (a masked transfer's element or its
/// padding, from vector-to-scf) as one yielding their i16 bits: the same
/// promotion through f32 as a select would follow for the bf16 block
/// argument it becomes.
struct IfBF16AsBits : OpRewritePattern<scf::IfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(scf::IfOp op,
                                PatternRewriter &rewriter) const override {
    if (!llvm::any_of(op.getResultTypes(), isBF16) || !op.elseBlock())
      return failure();
    SmallVector<Type> types;
    for (Type t : op.getResultTypes())
      types.push_back(bitsType(t));
    Location loc = op.getLoc();
    for (Block *block : {op.thenBlock(), op.elseBlock()}) {
      auto yield = llvm::cast<scf::YieldOp>(block->getTerminator());
      rewriter.setInsertionPoint(yield);
      SmallVector<Value> operands;
      for (Value v : yield.getOperands())
        operands.push_back(
            isBF16(v.getType())
                ? arith::BitcastOp::create(rewriter, loc, bitsType(v.getType()),
                                           v)
                      .getResult()
                : v);
      rewriter.modifyOpInPlace(
          yield, [&] { yield.getResultsMutable().assign(operands); });
    }
    rewriter.setInsertionPoint(op);
    auto bits = scf::IfOp::create(rewriter, loc, types, op.getCondition(),
                                  /*withElseRegion=*/true);
    rewriter.eraseBlock(bits.thenBlock());
    rewriter.eraseBlock(bits.elseBlock());
    rewriter.inlineRegionBefore(op.getThenRegion(), bits.getThenRegion(),
                                bits.getThenRegion().end());
    rewriter.inlineRegionBefore(op.getElseRegion(), bits.getElseRegion(),
                                bits.getElseRegion().end());
    rewriter.setInsertionPointAfter(bits);
    SmallVector<Value> results;
    for (auto [old, now] : llvm::zip(op.getResults(), bits.getResults()))
      results.push_back(
          isBF16(old.getType())
              ? arith::BitcastOp::create(rewriter, loc, old.getType(), now)
                    .getResult()
              : now);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct TGCExpandMathPass
    : tgc::cpu::impl::TGCExpandMathPassBase<TGCExpandMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return llvm::is_contained({"math.exp", "math.expm1", "math.log",
                                 "math.log1p", "math.tanh", "math.erf"},
                                name);
    });
    // f32 <-> bf16 as integer arithmetic (round to nearest even): LLVM
    // calls __truncsfbf2 for a CPU without AVX512-BF16, which Debian's
    // libgcc does not have.
    arith::populateExpandBFloat16Patterns(patterns);
    patterns.add<SelectBF16AsBits, IfBF16AsBits>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
