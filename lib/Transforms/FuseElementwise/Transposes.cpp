//===- Transposes.cpp - one transpose per tensor --------------------------===//
//
// Attention's repeated transposes of one tensor share one result, and
// transposes are generics while fusion runs.
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

/// One transpose per (tensor, permutation) where the tensor has no other
/// reader: the forward and backward lowerings of attention each transpose
/// the same saved queries, keys and values into heads; the later reuses the
/// earlier's result (which dominates it). What stays alive until the
/// backward pass is then the transposed tensor instead of the original, of
/// the same size, and the original's one reader is the transpose, into
/// which its producer (RoPE) can fuse. A tensor read otherwise, or always
/// alive (a parameter), keeps its transposes: reuse would keep a copy alive.
void reuseTransposes(func::FuncOp func) {
  DominanceInfo dominance(func);
  // Replaces each of `ops` by an earlier one of the same source that
  // `same` accepts and that dominates it.
  auto reuseEarlier = [&](ArrayRef<Operation *> ops,
                          function_ref<bool(Operation *, Operation *)> same) {
    llvm::DenseMap<Value, SmallVector<Operation *>> bySource;
    for (Operation *op : ops) {
      SmallVector<Operation *> &seen = bySource[op->getOperand(0)];
      auto earlier = llvm::find_if(seen, [&](Operation *candidate) {
        return same(candidate, op) &&
               dominance.properlyDominates(candidate, op);
      });
      if (earlier != seen.end()) {
        op->replaceAllUsesWith(*earlier);
        op->erase();
        continue;
      }
      seen.push_back(op);
    }
  };
  // Identical reshapes first (views: no storage), so that the transposes of
  // one reshaped tensor read one value.
  SmallVector<Operation *> reshapes;
  func.walk([&](Operation *op) {
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
      reshapes.push_back(op);
  });
  reuseEarlier(reshapes, [](Operation *a, Operation *b) {
    return OperationEquivalence::isEquivalentTo(
        a, b, OperationEquivalence::IgnoreLocations);
  });
  auto permutationOf = [](Operation *op) {
    return cast<linalg::TransposeOp>(op).getPermutation();
  };
  SmallVector<Operation *> transposes;
  func.walk([&](linalg::TransposeOp op) {
    Value input = op.getInput();
    if (op.hasPureTensorSemantics() && !isa<BlockArgument>(input) &&
        llvm::all_of(input.getUsers(), [&](Operation *user) {
          return isa<linalg::TransposeOp>(user) &&
                 permutationOf(user) == op.getPermutation();
        }))
      transposes.push_back(op);
  });
  reuseEarlier(transposes, [&](Operation *a, Operation *b) {
    return permutationOf(a) == permutationOf(b);
  });
}

/// Transposes as generics for the duration of the fusion (a permuting copy
/// fuses with an elementwise producer or consumer: RoPE writes the heads'
/// layout, a gradient's layout change feeds RoPE's gradient directly);
/// those left unfused become linalg.transpose again.
void generalizeTransposes(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  SmallVector<linalg::TransposeOp> transposes;
  module.walk([&](linalg::TransposeOp op) {
    if (op.hasPureTensorSemantics())
      transposes.push_back(op);
  });
  for (linalg::TransposeOp op : transposes) {
    DenseI64ArrayAttr permutation = op.getPermutationAttr();
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generic =
        linalg::generalizeNamedOp(rewriter, op);
    if (succeeded(generic))
      (*generic)->setAttr(kPermutationAttr, permutation);
  }
}

void respecializeTransposes(ModuleOp module) {
  IRRewriter rewriter(module.getContext());
  SmallVector<linalg::GenericOp> generics;
  module.walk([&](linalg::GenericOp op) {
    if (op->hasAttr(kPermutationAttr))
      generics.push_back(op);
  });
  for (linalg::GenericOp op : generics) {
    auto permutation = op->getAttrOfType<DenseI64ArrayAttr>(kPermutationAttr);
    op->removeAttr(kPermutationAttr);
    // Still the permuting copy it was made from (a pattern may have folded
    // a constant input into it: then it stays a generic).
    Block *body = op.getBody();
    if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
        !llvm::hasSingleElement(*body) ||
        body->getTerminator()->getOperand(0) != body->getArgument(0))
      continue;
    rewriter.setInsertionPoint(op);
    rewriter.replaceOpWithNewOp<linalg::TransposeOp>(
        op, op.getDpsInputs()[0], op.getDpsInits()[0], permutation);
  }
}

} // namespace mlir::tg::fusion
