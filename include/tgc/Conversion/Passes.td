//===- Passes.td - tgc conversion passes -------------------*- tablegen -*-===//

#ifndef TGC_CONVERSION_PASSES_TD
#define TGC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTGToLinalgPass : Pass<"convert-tg-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lowers every tg op to linalg on tensors";
  let description = [{
    Rewrites tg ops into `linalg` named ops and `linalg.generic` on tensors
    (with `tensor`, `arith`, `math` and, for the scatter-add of
    `tg.embedding_grad`, `scf`), so the upstream bufferization and CPU/GPU
    code generation pipelines take over. Matrix products become named
    `linalg.matmul` and `linalg.batch_matmul` ops (batched inputs times a
    shared matrix fold their rows into one 2-D product; a transposed
    weight is materialised once).
    `tg` is illegal afterwards: an op without a lowering is an error.

    Attention, the norms and their gradients are tiled as their
    `tg.tiling` says (`#tg.attention_tiling`, `#tg.row_tasks`): the
    target's choice, made by its own pass before this one; without one an
    op is lowered untiled.

    Attention and its gradient are FlashAttention-2 loops: tiles of
    `tile` query positions × `tile` key positions with an online softmax,
    keeping the output and the per-row logsumexp; causal key tiles above
    the diagonal (and outside a sliding window) are never computed. With
    `task_tile`, parallel tasks in an `scf.forall` instead. The forward:
    one task per (sequence, key/value head, query tile), copying its
    queries (the G heads of a group stacked position-major) and each key
    tile into tiles of its own, writing its output rows and logsumexp into
    their slices. The gradient: one task per (sequence, key/value head),
    its query tiles in order (dK and dV accumulate over them), with its own
    copies and accumulators. With `transposed_operands` the gradient's
    products (dV += Pᵀ·dO, dK += dSᵀ·Q) read the left operand through a
    transposed map, so no score tile is transposed.

    A norm with `#tg.row_tasks` runs as one task per tile of rows, each
    computing its rows' statistics and outputs together; a gradient's
    weight (and bias) gradient is summed per task, then over the tasks.

    `fuse-updates` lowers each optimizer update (AdamW, SGD with momentum)
    to one loop writing the parameter and its state, instead of a loop per
    result: the gradient and the old state are read once, and the new
    state is not read back.
  }];
  let options = [
    Option<"fuseUpdates", "fuse-updates", "bool", "false",
           "Each optimizer update as one loop over its parameter and state">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect"
  ];
}

#endif // TGC_CONVERSION_PASSES_TD
