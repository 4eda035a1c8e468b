//===- Passes.td - the CUDA backend's passes ---------------*- tablegen -*-===//
//
// The GPU target's tiles of the neutral ops (chosen on tg, before
// convert-tg-to-linalg) and its kernel formation, run on bufferized linalg
// before the shared arena planner. Everything after it (gpu.launch, outlining, NVVM,
// PTX) is upstream MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TARGET_CUDA_PASSES_TD
#define TGC_TARGET_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def TGCGPUChooseTilesPass : Pass<"tgc-gpu-choose-tiles", "::mlir::ModuleOp"> {
  let summary = "Chooses how the GPU tiles attention and expert products";
  let description = [{
    Sets `tg.tiling` for convert-tg-to-linalg. On each tg.attention and
    tg.attention_grad: batched FlashAttention tiles over all sequences
    and heads, whose `[B·Hkv, T·G, T]` scores take at most
    `score-tile-bytes`; each tile's products and softmax then become
    kernels over every head at once (no per-head tasks, which would be
    small kernels). The gradient's products read score tiles through
    transposed maps. Norms stay one kernel per statistic over all rows.
    Attention over a key/value cache (`positions`) is left untiled. On
    each tg.grouped_matmul and tg.grouped_weight_grad: `#tg.row_chunks`,
    an expert's rows in chunks of `expert-chunk-rows`, its remainder in
    padded chunks of `expert-tail-rows` (each chunk's product is one
    launch, so chunks are a few of the matmul kernel's 64-row tiles).
  }];
  let options = [
    Option<"scoreTileBytes", "score-tile-bytes", "int64_t", "4194304",
           "Most bytes of one batched tile of attention scores (0: untiled)">,
    Option<"expertChunkRows", "expert-chunk-rows", "int64_t", "256",
           "Rows of an expert's full chunks">,
    Option<"expertTailRows", "expert-tail-rows", "int64_t", "64",
           "Rows of the padded chunks of an expert's remainder">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGCGPUPrepareKernelsPass
    : Pass<"tgc-gpu-prepare-kernels", "::mlir::func::FuncOp"> {
  let summary = "Puts every buffer operation in a form that becomes a kernel";
  let description = [{
    On bufferized linalg, before `convert-linalg-to-parallel-loops`: each
    `memref.copy` becomes a `linalg.copy` (a host `memcpy` cannot read
    device memory), and each linalg op whose iterators put a reduction
    before a parallel dimension is generalised and interchanged so that its
    parallel dimensions come first: they then all become one `scf.parallel`
    (the kernel's threads) around the sequential reduction loops, instead
    of a sequential host loop around small parallel ones.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def TGCGPUTileMatmulsPass
    : Pass<"tgc-gpu-tile-matmuls", "::mlir::func::FuncOp"> {
  let summary = "Matmuls as block programs over shared-memory tiles";
  let description = [{
    On bufferized linalg, before `convert-linalg-to-parallel-loops`: every
    contraction into f32 (of f32 operands, or of bf16 or f16 ones: mixed
    precision, its shared tiles in that type and each factor widened to
    f32 at its multiply-add) with one M, N and K dimension (and at most one batch
    dimension) — `linalg.matmul`, `linalg.batch_matmul`, transposed
    operands through their indexing maps — becomes a *block program*: an
    `scf.parallel` over output tiles of `tile-m` × `tile-n` (grid x over
    N, y over M, z over the batch) whose body holds the block's shared
    buffers and a sequence of *phases*, `scf.parallel` loops over the
    block's `threads` threads (`tgc.gpu.phase`). For each K tile of
    `tile-k`, one phase copies the A and B tiles into shared buffers (zero
    outside the operands: every M, N, K works) and the next accumulates
    each thread's (tile-m × tile-n / threads) outputs from them, in a
    per-thread buffer; a last phase adds the results to the output. A
    phase only reads what earlier phases wrote, so the program means the
    same with the phases run one after another — on the CPU, where
    `--gpu-emulate` runs it — as with every thread running them with a
    barrier between phases, which is what `tgc-gpu-lower-block-programs`
    makes of it.

    With `mma=nvvm` or `mma=emulated`, bf16 and f16 products use tensor
    cores instead: each warp of 32 consecutive threads owns a 16-row slice
    of the output tile and a run of 8-column subtiles, loads its PTX
    fragments of `mma.sync.m16n8k16.row.col` from the shared tiles into
    per-thread buffers, and multiplies them with `nvvm.mma.sync` (f32
    accumulators, the C fragments). `emulated` computes each lane's C
    fragment from the other lanes' A and B fragments by the PTX layouts, in
    a phase of its own, so that `--gpu-emulate` runs the same loads and
    stores on the host. Tiles that do not split into warps that way (tile-m
    a multiple of 16, tile-k of 16, the warps over tile-m / 16 rows, tile-n
    a multiple of 8 per warp column) keep the scalar multiply-adds.
  }];
  let options = [
    Option<"tileM", "tile-m", "int64_t", /*default=*/"64", "Output rows per block">,
    Option<"tileN", "tile-n", "int64_t", /*default=*/"64", "Output columns per block">,
    Option<"tileK", "tile-k", "int64_t", /*default=*/"16", "K per shared tile">,
    Option<"threads", "threads", "int64_t", /*default=*/"256", "Threads per block">,
    Option<"mma", "mma", "::tgc::cuda::MMAKind",
           /*default=*/"::tgc::cuda::MMAKind::None",
           "Tensor cores for bf16/f16 operands: none (scalar multiply-adds), "
           "nvvm (nvvm.mma.sync, sm_80 and later) or emulated (the same "
           "fragments, multiplied on the host for --gpu-emulate)",
           "TGC_MMA_KIND_CL_VALUES">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"];
}

def TGCGPUBlockReductionsPass
    : Pass<"tgc-gpu-block-reductions", "::mlir::func::FuncOp"> {
  let summary = "Reductions as block programs: one block per output element";
  let description = [{
    On bufferized linalg, after `tgc-gpu-prepare-kernels` (parallel
    dimensions first): a `linalg.generic` with one f32 or f64 output that
    reduces over its trailing dimensions — `out = combine(out, f(inputs,
    indices))` with `combine` one of addf, maximumf, maxnumf, minimumf,
    minnumf and `out` read by nothing else — over at least `min-size`
    elements (norm statistics, softmax and loss rows, sums to the loss
    and the gradient norm) becomes a block program with one block per
    output element. Its threads (a power of two up to `threads`) each
    combine a strided share of the reduction, then halve the partial
    results in shared memory phase by phase, and thread 0 combines the
    block's result into the output. Smaller reductions stay one thread per
    output element. The order of the additions differs from the CPU's
    (a tree instead of a chain): results agree to rounding.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"256",
           "Most threads per block (a power of two)">,
    Option<"minSize", "min-size", "int64_t", /*default=*/"64",
           "Smallest reduction given a block">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TGCGPULowerBlockProgramsPass
    : Pass<"tgc-gpu-lower-block-programs", "::mlir::func::FuncOp"> {
  let summary = "Block programs (tgc-gpu-tile-matmuls) to gpu.launch with barriers";
  let description = [{
    Each block program becomes a `gpu.launch` over its grid with as many
    threads as its phases have: its shared buffers become the launch's
    workgroup attributions (shared memory), its per-thread buffers
    (indexed first by the thread) private attributions of the remaining
    shape, and each phase the thread's own iteration followed by a
    `gpu.barrier`. Runs after `convert-parallel-loops-to-gpu`, which leaves
    block programs alone (they carry no loop mapping).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def TGCGPUMapKernelsPass : Pass<"tgc-gpu-map-kernels", "::mlir::func::FuncOp"> {
  let summary = "Maps each host-level parallel loop to GPU blocks and threads";
  let description = [{
    After `convert-linalg-to-parallel-loops`. The host program is the
    function body and the bodies of its top-level loops that hold parallel
    loops (the fused loss's and chunked attention's loops over row chunks).
    Block programs (`tgc-gpu-tile-matmuls`) are kernels already and are
    left alone. Host-level work that is not a parallel loop — scalar stores of 0-d
    fills, full reductions to a scalar, the loss's final division — is
    wrapped in a one-iteration `scf.parallel`, since host code must not
    touch device memory. A loop whose views depend on loaded values (the
    embedding gradient's scatter by token id) is interchanged with the
    parallel loops over columns inside it when every access there is
    indexed by the column in its trailing dimensions, of buffers whose
    trailing dimensions the loop leaves in place: one thread per column
    walks the tokens in order (deterministic, no atomics). A loop whose
    loaded values set the trip counts of loops of kernels inside it, read
    from small buffers it leaves unchanged (a mixture-of-experts loop over
    experts reads their row offsets, which count each expert's chunks of
    rows), stays a host loop reading host copies of them, copied before it
    (`gpu.memcpy` from device memory; `memref.copy` with
    `device-memory=false`) unless an earlier loop's copy still holds.
    Any other such loop runs whole in one thread.
    A view at an offset loaded from a
    read-only argument outside any loop (a decode step's KV-cache row at
    its position), read only by kernels, is computed again inside each of
    them, from the load on. Every host-level
    `scf.parallel` then has its
    iteration space linearised and split into blocks of
    `threads-per-block` threads (`#gpu.loop_dim_map` to `block_x` and
    `thread_x`, a bounds guard for the last block; an upper bound known
    only at run time, such as an expert chunk's rows, is mapped at the
    constant it cannot exceed and guarded); the innermost
    dimension is the fastest-varying, so neighbouring threads touch
    neighbouring elements (coalesced accesses). Parallel loops nested
    inside a kernel become sequential loops of their thread. The result is still
    host-executable (`tgc --target=cuda --gpu-emulate` runs it on the CPU);
    `convert-parallel-loops-to-gpu` turns it into `gpu.launch` ops.
  }];
  let options = [
    Option<"threadsPerBlock", "threads-per-block", "int64_t", /*default=*/"256",
           "Threads per block (fewer when the loop has fewer iterations)">,
    Option<"deviceMemory", "device-memory", "bool", /*default=*/"true",
           "Buffers live in device memory (false: --gpu-emulate runs the "
           "kernels on the host, in host memory, and a block program of one "
           "block keeps its buffers at the function's entry)">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def TGCGPUHoistArenaAllocsPass
    : Pass<"tgc-gpu-hoist-arena-allocs", "::mlir::func::FuncOp"> {
  let summary = "Moves the step's planned buffers to its entry";
  let description = [{
    After `tgc-plan-buffers`, before `gpu-async-region`. A planned buffer
    is a fixed offset into the device arena, so where it is "allocated"
    does not matter; in the middle of the launches, though, each
    `memref.alloc` is a host side effect before which `gpu-async-region`
    waits for the stream. Moved to the function's entry (out of host loops
    too), the launches form one chain on one stream with a single wait at
    the end. The device has no heap: a buffer the arena does not hold is
    an error. So is a host program that still touches buffer contents (a
    parallel loop `convert-parallel-loops-to-gpu` left unconverted, a
    load or store outside a kernel): it would read device memory on the
    host.
  }];
}

def TGCGPUMergeKernelModulesPass
    : Pass<"tgc-gpu-merge-kernel-modules", "::mlir::ModuleOp"> {
  let summary = "Puts every outlined kernel into one gpu.module";
  let description = [{
    After `gpu-kernel-outlining`, which makes one `gpu.module` per kernel:
    moves every kernel into the first module, named after the module it
    came from (`@train_step_kernel_12`), keeps one copy of the globals the
    modules share (RoPE tables), and points the launches at the merged
    module. The executable then loads (and the driver JIT-compiles) one
    PTX module instead of one per kernel, and `--emit=ptx` is one file
    `ptxas` assembles at once.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // TGC_TARGET_CUDA_PASSES_TD
