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

    Attention and its gradient are FlashAttention-2 loops: tiles of T
    query positions × T key positions with an online softmax, keeping the
    output and the per-row logsumexp; causal key tiles above the diagonal
    are never computed. `attention-tile-bytes` bounds one tile's scores
    (`[B·Hkv, T·G, T]`; T a multiple of 16, at least 16); 0 makes the whole
    sequence one tile (no loops).

    `task-bytes` (a CPU choice: what one task may keep in its core's
    cache; 0 keeps the batched forms) lowers two kinds of op as parallel
    tasks in an `scf.forall`. Attention's forward: one task per
    (sequence, key/value head, query tile), which copies its queries (the
    G heads of a group stacked position-major) and each key tile (Kᵀ, V) from the sequence's layout
    into small tiles of its own and runs the same online softmax on them,
    its score tile `[T·G, T]` at most this many bytes, so scores,
    probabilities and the running state stay in the task's cache; it
    computes its output rows and logsumexp into its slices of the
    sequence's layout. Its gradient: one task per (sequence, key/value
    head), the query tiles in order inside it (dK and dV accumulate over
    them), with its own copies of its queries, dO, K, Kᵀ and Vᵀ and its
    own dQ, dK and dV accumulators, copied into the gradients' slices at
    the end. RMSNorm,
    LayerNorm and their gradients: one task per tile of rows (as many rows
    as fit this many bytes), which computes the rows' statistics and then
    their outputs while the rows are in its cache, instead of a pass over
    the whole tensor for each; a gradient's weight (and bias) gradient is
    summed per task, then over the tasks.

    `fuse-updates` lowers each optimizer update (AdamW, SGD with momentum)
    to one loop writing the parameter and its state, instead of a loop per
    result: the gradient and the old state are read once, and the new
    state is not read back. `transposed-operands` makes attention's
    gradient products (dV += Pᵀ·dO, dK += dSᵀ·Q) batch matmuls whose map
    reads the left operand transposed, so no score tile is transposed.
  }];
  let options = [
    Option<"attentionTileBytes", "attention-tile-bytes", "int64_t", "0",
           "Most bytes of one attention score tile (0: the whole sequence)">,
    Option<"taskBytes", "task-bytes", "int64_t", "0",
           "Attention's forward and the norms as parallel tasks, each "
           "task's tiles at most this many bytes (0: off)">,
    Option<"fuseUpdates", "fuse-updates", "bool", "false",
           "Each optimizer update as one loop over its parameter and state">,
    Option<"transposedOperands", "transposed-operands", "bool", "false",
           "Attention's gradient products read the score tiles transposed "
           "through their maps instead of from transposed copies">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect"
  ];
}

#endif // TGC_CONVERSION_PASSES_TD
