//===- ChooseTiles.cpp - the GPU's tiles of attention ---------------------===//
//
// See the pass description: batched tiles, every head in each kernel.
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
    if (scoreTileBytes <= 0)
      return;
    getOperation().walk([&](Operation *op) {
      if (!tgc::isTiledAttention(op))
        return;
      int64_t tile = tgc::batchedTilePositions(tgc::AttentionShape::of(op),
                                               scoreTileBytes);
      op->setAttr(tg::TGDialect::kTilingAttrName,
                  tg::AttentionTilingAttr::get(ctx, tile, /*task_tile=*/0,
                                               /*transposed_operands=*/true));
    });
  }
};

} // namespace
