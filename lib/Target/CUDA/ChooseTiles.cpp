//===- ChooseTiles.cpp - the GPU's tiles of the neutral ops ---------------===//
//
// See the pass description: batched attention tiles, every head in each
// kernel; an expert's rows in static chunks.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CUDA/Passes.h"
#include "tgc/Target/Tiling.h"

#include "tgc/Dialect/TG/IR/TGOps.h"

namespace tgc::cuda {
#define GEN_PASS_DEF_TGCGPUCHOOSETILESPASS
#include "tgc/Target/CUDA/Passes.h.inc"
} // namespace tgc::cuda

using namespace mlir;

namespace {

struct TGCGPUChooseTilesPass
    : tgc::cuda::impl::TGCGPUChooseTilesPassBase<TGCGPUChooseTilesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(tgc::setExpertRowChunks(getOperation(), getArgument(),
                                       expertChunkRows, expertTailRows)))
      return signalPassFailure();
    // No per-head tasks: they would be small kernels.
    getOperation().walk([&](Operation *op) {
      if (Attribute tiling =
              tgc::attentionTiling(op, scoreTileBytes, /*taskBytes=*/0))
        op->setAttr(tg::TGDialect::kTilingAttrName, tiling);
    });
  }
};

} // namespace
