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
    code generation pipelines take over. Matrix products become generic
    contractions that `linalg-specialize-generic-ops` turns into named
    matmuls where they match; attention materialises its scores per
    (batch, head) as a generic contraction, softmax and contraction.
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

def TGCFuseElementwisePass : Pass<"tgc-fuse-elementwise", "::mlir::ModuleOp"> {
  let summary = "Fuses chains of elementwise linalg.generic ops on tensors";
  let description = [{
    Target-neutral, on linalg on tensors after `convert-tg-to-linalg`:

    - Producer into consumer (MLIR's elementwise fusion patterns,
      `linalg::populateElementwiseOpsFusionPatterns`): an elementwise
      `linalg.generic` whose only user is another `linalg.generic` is fused
      into it, so chains such as residual add → scale, SiLU · up, or an
      elementwise producer of a row reduction become one loop nest that
      reads its inputs once and writes one result. A producer with a few
      readers, all generics, is recomputed in each when it is cheap (at
      most 8 scalar ops per element, no gathers) and that moves fewer
      bytes: (readers − 1) · its inputs' bytes < (readers + 1) · its
      result's bytes. A SiLU read by its product and by a gradient is
      recomputed; a sum of three gradients read three times is stored.
    - Siblings: two generics over the same loops (same iterator types and
      sizes) that read a common tensor over every loop become one generic
      with both results, at the later one's place, so the shared tensor is read once.
      Not when a result of the earlier is read before the later, and only
      for results into fresh tensors (not a loop's running values, which
      are updated in place). Producer fusion then runs again: a producer
      whose readers became one is fused into it.
    - Sums of products: an elementwise loop that only adds the results of
      `linalg.matmul`s, each of which starts from a zero fill and has no
      other reader (the gradient of a tensor read by several projections:
      dX = dQ·Wq + dK·Wk + dV·Wv), becomes one accumulation: each product
      after the first accumulates into the previous one's output, and the
      loop goes (one pass over dX less per term).
    - Layout changes: transposes take part as generics (those left unfused
      become `linalg.transpose` again); a transpose of a tensor with no
      other reader is computed once (attention's forward and backward both
      transpose the saved queries, keys and values); a reshape between an
      elementwise loop and a transpose is folded into the loop (upstream's
      fold-by-expansion patterns, only there), so the two fuse.
    - Into tasks: an elementwise loop that is the only reader of the rows
      a parallel task writes (a norm's tasks, `task-bytes`) runs inside
      the task on those rows, its other inputs sliced like them (they must
      exist before the tasks): the residual stream's gradient, the sum of
      a norm's input gradient and the gradient flowing past the norm, is
      written once by the norm's tasks. A cast that widens a saved bf16/f16
      copy and that only tasks and loops read (the norms' tasks on the saved
      residual stream, attention's gradient tasks on Q, K and V, its
      rowsum(dO·O) reading O through a reshape) is no pass of its own: each
      task slices the narrow tensor, and the loops widen the elements as
      they read them (another reader in a task, e.g. a copy, reads the
      slice widened there).

    Neither moves a read past an in-place write of what it reads: an op
    between the two positions that takes the tensor as its destination
    (attention's running max in its key-tile loop), or the update of a
    parameter or optimizer state (tg-schedule-updates puts updates inside
    the backward sweep; the runtime passes one buffer for the old and the
    new value). Fan-in stays at most 40 inputs (a GPU kernel's parameters).
    A saved activation's low-precision copy (`tgc.saved_copy`, from a
    `tg.cast` of tg-low-precision-saves) is neither fused into its readers
    nor moved later as a sibling, but past fresh tensors to its input's
    next reader (silu(g)·u after up's copy): it is made in the forward pass
    so that the f32 value need not live until the reverse graph reads it.
    Named ops (matmuls, transposes, fills) are left alone, so the targets'
    matmul schedules see the same products. The reshape-propagation
    patterns of `linalg-fuse-elementwise-ops` are not used: they rewrite
    matmuls fed through reshapes into higher-rank generic contractions.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TGCEmitCEntryPass : Pass<"tgc-emit-c-entry", "::mlir::ModuleOp"> {
  let summary = "Adds the stable C entry point `tgc_<fn>(void **buffers)`";
  let description = [{
    Runs on the LLVM dialect after `func` lowering with bare-pointer memrefs:
    for each listed function `f(ptr, ptr, ...)` adds
    `void tgc_f(void **buffers)` that loads the i-th pointer from `buffers`
    and calls `f`. The runtime and other programs call this one symbol;
    the order of the buffers is documented in the generated `train_step.h`.
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "Functions to expose">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TGCPlanBuffersPass : Pass<"tgc-plan-buffers", "::mlir::ModuleOp"> {
  let summary = "Plans the bufferized step's buffers into one static arena";
  let description = [{
    Runs after bufferization (results already out-parameters) and the
    matmul schedule, before buffer deallocation. Every `memref.alloc` in a
    function's entry block with a static shape and identity layout gets a
    live range: from the alloc to the last top-level op that uses it or any
    value derived from it (views, casts, the results of ops whose regions
    use it). Offsets come from the same greedy-by-size assignment as the tg
    memory planner (`assignArenaOffsets`, 64-byte alignment), so buffers
    whose ranges are disjoint share memory. Each planned alloc gets
    `tgc.arena_offset`; the arena's size is the module attribute
    `tgc.arena_bytes`. Allocs in the body of a top-level `scf.for` (the
    chunk loops of the fused loss and of attention) are planned too, on a
    schedule that places the loop's body after the loop's own position:
    a buffer allocated in one iteration and dead by its end gets one place
    for every iteration, and buffers used inside the loop stay alive until
    the loop ends. Allocs in deeper loops, dynamic shapes and buffers that
    escape (returned, or yielded to the next iteration) stay on the heap.
    `tgc-lower-arena-allocs` lowers the plan.
  }];
}

def TGCLowerArenaAllocsPass : Pass<"tgc-lower-arena-allocs", "::mlir::ModuleOp"> {
  let summary = "Lowers planned allocs to the arena allocator, deallocs to its release";
  let description = [{
    Before `finalize-memref-to-llvm`: a `memref.alloc` with
    `tgc.arena_offset = N` becomes `tgc_arena_alloc(N)`, every
    `memref.dealloc` becomes `tgc_arena_release(ptr)` (a no-op inside the
    arena, `free` outside), and the module defines
    `const int64_t tgc_arena_bytes`. The two functions are declared like
    `malloc` and `free` (a `noalias` result; effects on inaccessible memory
    and, for release, on the argument), so LLVM keeps treating every buffer
    as its own object — views of one global arena would make every pair of
    buffers may-alias and cost the loops their vectorisation — while the
    call order (alloc after the release of whatever shared its bytes) keeps
    reuse correct, exactly as with `malloc` reusing freed memory. The
    runtime (`lib/Runtime/Arena.cpp`) maps `tgc_arena_bytes` once per run.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // TGC_CONVERSION_PASSES_TD
