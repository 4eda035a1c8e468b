//===- Passes.td - tgc passes on the lowered step ----------*- tablegen -*-===//
//
// Passes on the step once it is linalg, buffers or LLVM, that are not
// conversions: elementwise fusion, the arena plan and its lowering, the C
// entry point.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TRANSFORMS_PASSES_TD
#define TGC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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
      a parallel task writes (a norm's tasks, `#tg.row_tasks`) runs inside
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

def TGCDistinctResultsPass : Pass<"tgc-distinct-results", "::mlir::ModuleOp"> {
  let summary = "Gives each memref result of a function its own buffer";
  let description = [{
    After bufferization, before `buffer-results-to-out-params`: where a
    `func.return` returns one buffer more than once (two parameters whose
    gradients are the same value, as the output biases of a parallel-residual
    layer), each repeat returns a fresh copy of it. Every out-parameter then
    has a buffer of its own to be written to; the out-params pass cannot
    hoist one allocation into two parameters.
  }];
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

#endif // TGC_TRANSFORMS_PASSES_TD
