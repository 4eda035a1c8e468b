//===- LoopBodies.h - the blocks of a step and its loops --------*- C++ -*-===//
//
// The lowering leaves sequential scf.for loops over chunks and tiles (the
// fused loss's row chunks, attention's query and key tiles, nested) around
// ordinary loop nests and products. The passes that plan buffers, outline
// loop nests and parallelise them treat each such loop body like the
// function's body.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_CONVERSION_LOOPBODIES_H
#define TGC_CONVERSION_LOOPBODIES_H

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace tgc {

/// Appends `block` and, recursively, the bodies of the scf.for loops in it
/// that `descend` accepts.
inline void
collectLoopBodies(mlir::Block &block,
                  llvm::function_ref<bool(mlir::scf::ForOp)> descend,
                  llvm::SmallVectorImpl<mlir::Block *> &blocks) {
  blocks.push_back(&block);
  for (auto loop : block.getOps<mlir::scf::ForOp>())
    if (descend(loop))
      collectLoopBodies(*loop.getBody(), descend, blocks);
}

} // namespace tgc

#endif // TGC_CONVERSION_LOOPBODIES_H
