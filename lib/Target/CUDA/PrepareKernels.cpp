//===- PrepareKernels.cpp - linalg ops in the form kernels take
//------------===//
//
// tgc-gpu-prepare-kernels (see its description in Passes.td).
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CUDA/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace tgc::cuda {
#define GEN_PASS_DEF_TGCGPUPREPAREKERNELSPASS
#include "tgc/Target/CUDA/Passes.h.inc"
} // namespace tgc::cuda

using namespace mlir;

namespace {

//===----------------------------------------------------------------------===//
// tgc-gpu-prepare-kernels
//===----------------------------------------------------------------------===//

struct TGCGPUPrepareKernelsPass
    : tgc::cuda::impl::TGCGPUPrepareKernelsPassBase<TGCGPUPrepareKernelsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    IRRewriter rewriter(&getContext());

    SmallVector<memref::CopyOp> copies;
    func.walk([&](memref::CopyOp op) { copies.push_back(op); });
    for (memref::CopyOp copy : copies) {
      rewriter.setInsertionPoint(copy);
      linalg::CopyOp::create(rewriter, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      rewriter.eraseOp(copy);
    }

    SmallVector<linalg::LinalgOp> ops;
    func.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
    for (linalg::LinalgOp op : ops) {
      // The new loop order: parallel dimensions first, each group in order.
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      SmallVector<unsigned> order;
      for (unsigned i = 0; i < iterators.size(); ++i)
        if (iterators[i] == utils::IteratorType::parallel)
          order.push_back(i);
      for (unsigned i = 0; i < iterators.size(); ++i)
        if (iterators[i] != utils::IteratorType::parallel)
          order.push_back(i);
      bool identity = llvm::all_of(llvm::enumerate(order), [](auto e) {
        return e.index() == e.value();
      });
      if (identity)
        continue;
      rewriter.setInsertionPoint(op);
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      if (!generic) {
        FailureOr<linalg::GenericOp> generalized =
            linalg::generalizeNamedOp(rewriter, op);
        if (failed(generalized)) {
          op.emitError("tgc-gpu-prepare-kernels: cannot generalise this op "
                       "to put its parallel dimensions first");
          return signalPassFailure();
        }
        generic = *generalized;
      }
      if (failed(linalg::interchangeGenericOp(rewriter, generic, order))) {
        generic.emitError("tgc-gpu-prepare-kernels: cannot interchange the "
                          "loops of this op");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
