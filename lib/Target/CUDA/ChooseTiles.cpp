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
    MLIRContext *ctx = &getContext();
    int64_t chunkRows = expertChunkRows, tailRows = expertTailRows;
    if (chunkRows < 1 || tailRows < 1 || tailRows > chunkRows) {
      getOperation().emitError()
          << "tgc-gpu-choose-tiles: expert chunks need 1 <= expert-tail-rows "
             "<= expert-chunk-rows, got "
          << tailRows << " and " << chunkRows;
      return signalPassFailure();
    }
    StringRef name = tg::TGDialect::kTilingAttrName;
    getOperation().walk([&](Operation *op) {
      if (isa<tg::GroupedMatmulOp, tg::GroupedWeightGradOp>(op)) {
        op->setAttr(name, tg::RowChunksAttr::get(ctx, chunkRows, tailRows));
        return;
      }
      // No per-head tasks: they would be small kernels.
      if (Attribute tiling =
              tgc::attentionTiling(op, scoreTileBytes, /*taskBytes=*/0))
        op->setAttr(name, tiling);
    });
  }
};

} // namespace
