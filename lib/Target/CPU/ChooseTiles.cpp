//===- ChooseTiles.cpp - the CPU's tiles of the neutral ops ---------------===//
//
// See the pass description: a task's tiles fit a core's L2; an expert's
// rows reach the matmul schedule in static chunks.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CPU/Passes.h"
#include "tgc/Target/Tiling.h"

#include "tgc/Dialect/TG/IR/TGOps.h"

namespace tgc::cpu {
#define GEN_PASS_DEF_TGCCPUCHOOSETILESPASS
#include "tgc/Target/CPU/Passes.h.inc"
} // namespace tgc::cpu

using namespace mlir;

namespace {

struct TGCCPUChooseTilesPass
    : tgc::cpu::impl::TGCCPUChooseTilesPassBase<TGCCPUChooseTilesPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    if (failed(tgc::setExpertRowChunks(getOperation(), getArgument(),
                                       expertChunkRows, expertTailRows)))
      return signalPassFailure();
    StringRef name = tg::TGDialect::kTilingAttrName;
    getOperation().walk([&](Operation *op) {
      if (isa<tg::AttentionOp, tg::AttentionGradOp>(op)) {
        if (Attribute tiling =
                tgc::attentionTiling(op, scoreTileBytes, taskBytes))
          op->setAttr(name, tiling);
        return;
      }
      if (isa<tg::RMSNormOp, tg::RMSNormGradOp, tg::LayerNormOp,
              tg::LayerNormGradOp>(op) &&
          taskBytes > 0)
        if (int64_t rows = tgc::normRowsPerTask(op, taskBytes))
          op->setAttr(name, tg::RowTasksAttr::get(ctx, rows));
    });
  }
};

} // namespace
