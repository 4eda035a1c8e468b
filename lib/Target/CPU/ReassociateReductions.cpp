//===- ReassociateReductions.cpp - vectorisable float reductions ----------===//
//
// See the pass description: marks the accumulating op of each linalg
// reduction `reassoc`, so LLVM may sum in vector lanes.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCREASSOCIATEREDUCTIONSPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {

/// Whether `op` combines two values associatively (up to rounding).
bool isFloatCombiner(Operation *op) {
  return llvm::isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp,
                   arith::MinimumFOp, arith::MaxNumFOp, arith::MinNumFOp>(op);
}

struct TGCReassociateReductionsPass
    : tgc::cpu::impl::TGCReassociateReductionsPassBase<
          TGCReassociateReductionsPass> {
  void runOnOperation() override {
    getOperation().walk([](linalg::GenericOp op) {
      if (op.getNumReductionLoops() == 0)
        return;
      Block *body = op.getBody();
      auto yield = llvm::cast<linalg::YieldOp>(body->getTerminator());
      for (OpOperand &init : op.getDpsInitsMutable()) {
        BlockArgument acc = op.getMatchingBlockArgument(&init);
        Value yielded =
            yield.getOperand(init.getOperandNumber() - op.getNumDpsInputs());
        Operation *combiner = yielded.getDefiningOp();
        if (!combiner || combiner->getBlock() != body ||
            !isFloatCombiner(combiner) ||
            !llvm::is_contained(combiner->getOperands(), acc))
          continue;
        auto fastmath = llvm::cast<arith::ArithFastMathInterface>(combiner);
        arith::FastMathFlags flags = arith::FastMathFlags::reassoc;
        if (arith::FastMathFlagsAttr old = fastmath.getFastMathFlagsAttr())
          flags = flags | old.getValue();
        combiner->setAttr(
            fastmath.getFastMathAttrName(),
            arith::FastMathFlagsAttr::get(op.getContext(), flags));
      }
    });
  }
};

} // namespace
