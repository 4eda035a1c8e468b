//===- DistinctResults.cpp - one buffer per returned memref ---------------===//
//
// buffer-results-to-out-params turns each returned allocation into the
// out-parameter it is copied to; one allocation returned twice would have
// to become two parameters. Repeats return copies instead.
//
//===----------------------------------------------------------------------===//

#include "tgc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCDISTINCTRESULTSPASS
#include "tgc/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {

struct DistinctResultsPass
    : public tg::impl::TGCDistinctResultsPassBase<DistinctResultsPass> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([](func::ReturnOp ret) {
      llvm::SmallPtrSet<Value, 16> returned;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value buffer = operand.get();
        auto type = llvm::dyn_cast<MemRefType>(buffer.getType());
        if (!type || returned.insert(buffer).second)
          continue;
        if (!type.getLayout().isIdentity()) {
          ret.emitError("returns a buffer with a non-identity layout twice "
                        "(result ")
              << operand.getOperandNumber() << ")";
          return WalkResult::interrupt();
        }
        SmallVector<Value> sizes;
        for (int64_t dim = 0; dim < type.getRank(); ++dim)
          if (type.isDynamicDim(dim))
            sizes.push_back(
                memref::DimOp::create(b, ret.getLoc(), buffer, dim));
        Value copy = memref::AllocOp::create(b, ret.getLoc(), type, sizes);
        memref::CopyOp::create(b, ret.getLoc(), buffer, copy);
        operand.set(copy);
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
