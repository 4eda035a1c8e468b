//===- ParallelizeLoops.cpp - parallel chunks of large linalg ops ---------===//
//
// See the pass description: the step's elementwise and reduction ops on
// every thread, in chunks coarse enough to pay for the fork and join.
//
//===----------------------------------------------------------------------===//

#include "tgc/Conversion/LoopBodies.h"
#include "tgc/Target/CPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCPARALLELIZELOOPSPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {

struct TGCParallelizeLoopsPass
    : tgc::cpu::impl::TGCParallelizeLoopsPassBase<TGCParallelizeLoopsPass> {
  using Base::Base;

  /// Chunks along the outermost loop for `op`, or 0 to leave it alone.
  int64_t chunksFor(linalg::LinalgOp op) {
    if (llvm::isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op) ||
        !op.hasPureBufferSemantics() || op.getNumLoops() == 0 ||
        op.getIteratorTypesArray()[0] != utils::IteratorType::parallel)
      return 0;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t work = 1;
    for (int64_t r : ranges) {
      if (ShapedType::isDynamic(r))
        return 0;
      work *= r;
    }
    int64_t chunks =
        std::min({ranges[0], maxChunks.getValue(), work / minChunkWork});
    return chunks >= 2 ? chunks : 0;
  }

  void runOnOperation() override {
    if (minChunkWork < 1 || maxChunks < 2) {
      getOperation().emitError(
          "tgc-parallelize-loops: min-chunk-work must be >= 1 and "
          "max-chunks >= 2");
      return signalPassFailure();
    }
    SmallVector<std::pair<linalg::LinalgOp, int64_t>> work;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      // The function's ops and those of its loops' bodies at any depth
      // (the chunk loops of the fused loss, attention's tile loops).
      SmallVector<Block *> blocks;
      tgc::collectLoopBodies(
          func.getBody().front(), [](scf::ForOp) { return true; }, blocks);
      for (Block *block : blocks)
        for (Operation &op : *block)
          if (auto linalgOp = llvm::dyn_cast<linalg::LinalgOp>(&op))
            if (int64_t chunks = chunksFor(linalgOp))
              work.push_back({linalgOp, chunks});
    }
    IRRewriter rewriter(&getContext());
    for (auto [op, chunks] : work) {
      int64_t outer = op.getStaticLoopRanges()[0];
      SmallVector<OpFoldResult> sizes(op.getNumLoops(),
                                      rewriter.getIndexAttr(0));
      sizes[0] = rewriter.getIndexAttr((outer + chunks - 1) / chunks);
      scf::SCFTilingOptions options;
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp)
          .setTileSizes(sizes);
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, llvm::cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        continue; // stays a sequential loop nest
      rewriter.eraseOp(op);
    }
  }
};

} // namespace
