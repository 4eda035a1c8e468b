//===- Passes.td - the CPU backend's passes ----------------*- tablegen -*-===//
//
// The CPU target's tiles of the neutral ops (chosen on tg, before
// convert-tg-to-linalg), its schedule (run on bufferized linalg before the
// shared arena planner) and its lowering helpers. Target-neutral passes live in
// include/tgc/Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TARGET_CPU_PASSES_TD
#define TGC_TARGET_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def TGCCPUChooseTilesPass : Pass<"tgc-cpu-choose-tiles", "::mlir::ModuleOp"> {
  let summary = "Chooses how the CPU tiles attention, the norms and expert products";
  let description = [{
    Sets `tg.tiling` on each tg.attention, tg.attention_grad, norm (and
    norm gradient) and expert product for convert-tg-to-linalg, sized for a
    core's caches:

    * attention as parallel tasks, one per (sequence, key/value head,
      query tile) in the forward and per (sequence, key/value head) in the
      gradient, whose own score tile `[T·G, T]` takes at most `task-bytes`,
      so scores, probabilities and the running state stay in the task's
      core's L2; batched tiles of `[B·Hkv, T·G, T]` scores of at most
      `score-tile-bytes` where tasks are off; the gradient's products read
      score tiles through transposed maps (tgc-vectorize-matmuls takes
      them);
    * each norm as tasks over tiles of rows of at most `task-bytes`, which
      compute the rows' statistics and outputs while the rows are in cache;
    * each expert's rows of tg.grouped_matmul and tg.grouped_weight_grad
      in chunks of `expert-chunk-rows`, the rest in zero-padded chunks of
      `expert-tail-rows`: static shapes for the matmul schedule.

    A budget of 0 leaves those ops untiled (`score-tile-bytes` and
    `task-bytes` both 0: attention; `task-bytes` 0: the norms). Attention
    over a key/value cache (`positions`) is left untiled.
  }];
  let options = [
    Option<"scoreTileBytes", "score-tile-bytes", "int64_t",
           "::tgc::cpu::kAttentionTileBytes",
           "Most bytes of one batched tile of attention scores (0: none)">,
    Option<"taskBytes", "task-bytes", "int64_t", "::tgc::cpu::kTaskBytes",
           "Most bytes of one parallel task's tiles (0: no tasks)">,
    Option<"expertChunkRows", "expert-chunk-rows", "int64_t",
           "::tgc::cpu::kExpertChunkRows",
           "Rows per chunk of an expert's rows in its products">,
    Option<"expertTailRows", "expert-tail-rows", "int64_t",
           "::tgc::cpu::kExpertTailRows",
           "Rows per zero-padded chunk of an expert's last rows">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGCOutlineLoopNestsPass : Pass<"tgc-outline-loop-nests", "::mlir::ModuleOp"> {
  let summary = "Moves each top-level loop nest of the step into its own function";
  let description = [{
    On loops over memrefs (after `convert-linalg-to-loops`): every top-level
    `scf.for` without results in a step function's body (a public
    function, or generation's private `@prefill` and `@decode`; not the
    functions this pass outlines) becomes a call of
    a private function `@<fn>_nest<i>` (marked `tgc.outlined`, kept out of
    line in LLVM). Constants and views (subviews, reshapes, casts) it uses
    are cloned into it, so it takes the root buffers as identity-layout
    memrefs. LLVM's loop passes cost time superlinear in the size of one
    function (SCEV walks the chain of dominating blocks for every guard);
    a train step is hundreds of loop nests in a row, so this turns a minute
    of `IndVarSimplify` into seconds. Each top-level `scf.parallel` (matmul
    tiles, parallel chunks) has its whole body outlined the same way (its
    loops one by one if the body cannot be), so LLVM sees `noalias` buffers
    inside OpenMP's regions, and is then outlined itself: OpenMP's
    translation analyses the function around every parallel region, which
    in the step function was quadratic. A top-level loop that holds
    parallel loops (the fused loss's loop over row chunks) stays in place
    and its body is treated like the step's: its loop nests, parallel
    bodies and parallel loops are outlined (taking the loop's induction
    variable as an argument), so its matmul tiles get `noalias` buffers
    too. Nests that would capture a memref with a non-identity layout or a
    dynamic shape stay in place. Identical outlined functions (same
    signature and noalias marks, equivalent bodies up to locations: a
    model's identical layers) are then merged into one, called from each
    place, so the LLVM lowering and LLVM's code generation see one layer's
    kernels instead of one copy per layer.

    A nest that takes a parameter (or optimizer state) and its updated
    value (the same `tg.param`/`tg.state` name: one buffer when the runtime
    updates in place, two otherwise, never overlapping) gets versions:
    `@<fn>_nest<i>_in_place` with each such group as one argument and
    `@<fn>_nest<i>_distinct`, all memref arguments `noalias` in both, and
    where it takes several such pairs, `@<fn>_nest<i>_some_shared`, the
    nest as it was, for pairs partly shared; `@<fn>_nest<i>` compares the
    pointers and calls one (its callers stay a single call, as a parallel
    loop's body must for OpenMP). LLVM vectorises a loop
    over two pointers that may alias only behind a run-time check that
    they are far apart, which fails when they are equal: every in-place
    update (AdamW, SGD) otherwise ran scalar.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def TGCNarrowFloatBitsPass : Pass<"tgc-narrow-float-bits", "::mlir::ModuleOp"> {
  let summary = "bf16/f16 loads and stores of integer bits as i16 accesses";
  let description = [{
    On the LLVM dialect: an `llvm.store` of a bf16 or f16 value that is an
    `llvm.bitcast` of i16 bits (what `tgc-expand-math`'s rounding makes)
    stores the i16 bits, and an `llvm.load` of bf16 or f16 that is only
    bitcast to i16 loads i16. The same bytes; but LLVM's x86 backend
    scalarises the `<16 x bfloat>` stores that its loop vectoriser makes
    of the float form on a CPU without AVX512-BF16 (x86-64-v4: each
    element extracted and stored as a 16-bit word): RoPE's forward loop,
    which writes a saved bf16 copy, ran three times as long as its fp32
    form there. Loads are rewritten alike, so that no bf16 vector is left
    for the backend to legalise.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def TGCExpandMathPass : Pass<"tgc-expand-math", "::mlir::ModuleOp"> {
  let summary = "Polynomial approximations of exp, log, tanh and erf";
  let description = [{
    Rewrites f32 `math.exp`, `math.expm1`, `math.log`, `math.log1p`,
    `math.tanh` and `math.erf` into MLIR's polynomial approximations
    (plain arithmetic, a few ULP), so LLVM vectorises the loops around them
    (softmax, SiLU, cross-entropy, GELU) instead of calling scalar libm
    functions once per element. Also rewrites `arith.truncf`/`arith.extf`
    between f32 and bf16 into integer arithmetic (round to nearest even):
    for a CPU without AVX512-BF16, LLVM would call `__truncsfbf2`, which
    Debian's libgcc does not provide, once per element. Selects and
    `scf.if` results of bf16 become selects and results of their i16 bits,
    which LLVM would otherwise promote through f32 the same way.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

// The matmul schedule of the CPU, in the order the `tgc-vectorize-matmuls`
// pipeline (tgc/Target/CPU/CPUBackend.h) runs it.

def TGCCPUStreamFewRowProductsPass
    : Pass<"tgc-cpu-stream-few-row-products", "::mlir::ModuleOp"> {
  let summary = "Products of a few rows read their transposed weight in place";
  let description = [{
    A product of at most 4 rows (a generation step's) reads the weight a
    transpose copied through its indexing maps instead, streaming it once
    rather than copying and packing it.
  }];
  let dependentDialects = [
    "::mlir::amx::AMXDialect", "::mlir::x86vector::X86VectorDialect",
    "::mlir::transform::TransformDialect", "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tg::TGDialect"
  ];
}

def TGCCPUMarkTileFusionsPass
    : Pass<"tgc-cpu-mark-tile-fusions", "::mlir::ModuleOp"> {
  let summary = "Marks what each product will do inside its output tiles";
  let description = [{
    Before anything changes the products: the fill that zeroes a product's
    output (kept as `tgc.fill_tiles_with` on the product, the fill gone),
    its epilogue (the elementwise loop right after it that reads it), a
    layout change of its output and the layout changes into heads that it
    reads (tgc/Target/ProductFusion.h). Each epilogue or transpose and the
    products it links to carry one index (`tgc.epilogue` and
    `tgc.epilogue_id`, ...), which `tgc-cpu-fuse-into-tiles` follows once
    the tiles exist.
  }];
  let options = [
    Option<"amx", "amx", "bool", "false",
           "The target has AMX bf16 tiles (tdpbf16ps)">,
    Option<"bf16Dot", "bf16-dot", "bool", "false",
           "The target has AVX512-BF16 dot products (vdpbf16ps) on 512-bit "
           "vectors: bf16 products use them where AMX is off">,
  ];
  let dependentDialects = [
    "::mlir::amx::AMXDialect", "::mlir::x86vector::X86VectorDialect",
    "::mlir::transform::TransformDialect", "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tg::TGDialect"
  ];
}

def TGCCPUEmitBF16ProductsPass
    : Pass<"tgc-cpu-emit-bf16-products", "::mlir::ModuleOp"> {
  let summary = "bf16 products on AMX tiles or AVX512-BF16 dot products";
  let description = [{
    bf16 x bf16 -> f32 products (mixed precision): with `amx` they run on
    AMX tiles; else with `bf16-dot` (AVX512-BF16 on 512-bit vectors) on
    `x86vector.avx512.dot` (vdpbf16ps, 32 multiply-adds per instruction):
    B packed as pairs along K, A's pairs broadcast, MR x NR register tiles
    of C kept in registers across blocks of KT pairs, sized by the tile
    model over K/2 (a pair has the bytes of one f32), the remainders as
    static smaller tiles (the last vector masked); with `fill-tiles` the
    fill that zeroes C starts the register tiles in the first block of K
    pairs instead. Checks the vector unit and `tiles` for the pipeline.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", "512",
           "Width of the target's vector registers in bits">,
    Option<"vectorRegisters", "vector-registers", "unsigned", "32",
           "Number of vector registers">,
    Option<"l1CacheBytes", "l1-cache-bytes", "int64_t", "32768",
           "L1 data cache per core in bytes">,
    Option<"l2CacheBytes", "l2-cache-bytes", "int64_t", "1048576",
           "L2 cache per core in bytes">,
    ListOption<"tiles", "tiles", "int64_t",
               "Override the model: MT,NT,KT,MR,NR for every matmul">,
    Option<"threads", "threads", "int64_t", "0",
           "Threads the output tiles are balanced for (0 or 1: none)">,
    Option<"amx", "amx", "bool", "false",
           "The target has AMX bf16 tiles (tdpbf16ps)">,
    Option<"bf16Dot", "bf16-dot", "bool", "false",
           "The target has AVX512-BF16 dot products (vdpbf16ps) on 512-bit "
           "vectors: bf16 products use them where AMX is off">,
    Option<"fillTiles", "fill-tiles", "bool", "false",
           "Do a product's neighbours inside its output tiles: the fill that "
           "zeroes its output, and the elementwise loop right after it that "
           "reads it (tgc/Target/ProductFusion.h)">,
  ];
  let dependentDialects = [
    "::mlir::amx::AMXDialect", "::mlir::x86vector::X86VectorDialect",
    "::mlir::transform::TransformDialect", "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tg::TGDialect"
  ];
}

def TGCCPUWidenProductOperandsPass
    : Pass<"tgc-cpu-widen-product-operands", "::mlir::ModuleOp"> {
  let summary = "The products left with narrow operands read f32 copies";
  let description = [{
    After tgc-cpu-emit-bf16-products: the narrow operands of the other
    products are widened to f32 once and the product is scheduled as an f32
    one (its fill then marked for its tiles too, with `fill-tiles`); a
    narrow buffer that one loop writes by rounding f32 values and only such
    products read is written as the rounded values in f32 instead (no
    widening). f32 right-hand operands whose rows lie a multiple of 2 KiB
    apart are copied into rows one cache line longer.
  }];
  let options = [
    Option<"amx", "amx", "bool", "false",
           "The target has AMX bf16 tiles (tdpbf16ps)">,
    Option<"bf16Dot", "bf16-dot", "bool", "false",
           "The target has AVX512-BF16 dot products (vdpbf16ps) on 512-bit "
           "vectors: bf16 products use them where AMX is off">,
    Option<"fillTiles", "fill-tiles", "bool", "false",
           "Do a product's neighbours inside its output tiles: the fill that "
           "zeroes its output, and the elementwise loop right after it that "
           "reads it (tgc/Target/ProductFusion.h)">,
  ];
  let dependentDialects = [
    "::mlir::amx::AMXDialect", "::mlir::x86vector::X86VectorDialect",
    "::mlir::transform::TransformDialect", "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tg::TGDialect"
  ];
}

def TGCCPUTileProductsPass : Pass<"tgc-cpu-tile-products", "::mlir::ModuleOp"> {
  let summary = "Parallel output tiles of every matmul, sized for the CPU";
  let description = [{
    For each `linalg.matmul` and `linalg.batch_matmul` on static memrefs:
    output tiles MT x NT as an `scf.forall` (OpenMP threads later; batch
    entries are parallel too). Unit-batch `batch_matmul` tiles become
    rank-reduced 2-D matmuls. No size has to divide another (primes,
    50257, 1).

    Tile sizes follow an analytical model of the target (in the style of
    BLIS; `tgc/Target/CPU/TileModel.h`, with unit tests): the register tile
    keeps MR x NR/lanes accumulators plus the B vectors and one broadcast in
    the vector registers, maximising FMAs per load, with NR of 1, 2 or 4
    vectors (LLVM keeps a tile row of another count out of registers); the
    K tile keeps the KT x NR slice of B in half of L1; MT x NT keeps the
    KT-deep panels of A and B in L2, splits until there are 16 output tiles
    (or a tile would be under 4 register tiles deep) and balances the tiles
    of each dimension. With `threads` (the host's CPUs when compiling for
    it) the grid is then chosen, among those with no more tiles per
    dimension, so that OpenMP's static schedule gives each of that many
    threads the same work. `tiles` (MT,NT,KT,MR,NR) overrides the model
    (lit tests do not depend on the machine). Each product carries its
    tiles as `tg.tiling = #tg.matmul_tiling<...>`, which the transform
    schedules (built in C++, run by the transform interpreter) match.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", "512",
           "Width of the target's vector registers in bits">,
    Option<"vectorRegisters", "vector-registers", "unsigned", "32",
           "Number of vector registers">,
    Option<"l1CacheBytes", "l1-cache-bytes", "int64_t", "32768",
           "L1 data cache per core in bytes">,
    Option<"l2CacheBytes", "l2-cache-bytes", "int64_t", "1048576",
           "L2 cache per core in bytes">,
    ListOption<"tiles", "tiles", "int64_t",
               "Override the model: MT,NT,KT,MR,NR for every matmul">,
    Option<"threads", "threads", "int64_t", "0",
           "Threads the output tiles are balanced for (0 or 1: none)">,
  ];
  let dependentDialects = [
    "::mlir::amx::AMXDialect", "::mlir::x86vector::X86VectorDialect",
    "::mlir::transform::TransformDialect", "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tg::TGDialect"
  ];
}

def TGCCPUFuseIntoTilesPass
    : Pass<"tgc-cpu-fuse-into-tiles", "::mlir::ModuleOp"> {
  let summary = "What tgc-cpu-mark-tile-fusions marked, done inside each output tile";
  let description = [{
    Each output tile writes a new layout of its product's output straight
    into it, reads its rows of a head from the sequence's layout, starts
    from its fill, and runs the epilogue on the tile right after its
    product; the whole-buffer loops go (a loop whose readers are not all
    tiles of the whole buffer stays).
  }];
  let dependentDialects = [
    "::mlir::amx::AMXDialect", "::mlir::x86vector::X86VectorDialect",
    "::mlir::transform::TransformDialect", "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tg::TGDialect"
  ];
}

def TGCCPUVectorizeProductTilesPass
    : Pass<"tgc-cpu-vectorize-product-tiles", "::mlir::ModuleOp"> {
  let summary = "Register tiles of every output tile, vectorised, as FMAs";
  let description = [{
    On the tiles tgc-cpu-tile-products made (by their `tg.tiling`): a K
    cache tile and MR x NR register tiles. The register loops are peeled:
    full tiles are static; the column remainder is cut into whole vectors
    (peeled again) and the row remainder done a row at a time, so only the
    last partial vector of a tile whose size is only known at run time is
    masked. The unit K loop is innermost for every variant, so the
    accumulators stay in registers across it. Each tile is vectorised with
    its own sizes; accumulators are hoisted out of the K loop;
    contractions become outer products (FMAs). The vector lowering
    patterns and canonicalisation run in separate greedy sets: together
    they do not converge on 1-row register tiles and on constant masks.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "unsigned", "512",
           "Width of the target's vector registers in bits">,
  ];
  let dependentDialects = [
    "::mlir::amx::AMXDialect", "::mlir::x86vector::X86VectorDialect",
    "::mlir::transform::TransformDialect", "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tg::TGDialect"
  ];
}

def TGCParallelizeLoopsPass : Pass<"tgc-parallelize-loops", "::mlir::ModuleOp"> {
  let summary = "Splits the step's large elementwise and reduction ops into parallel chunks";
  let description = [{
    On bufferized linalg ops at the top level of a function or of the body
    of a top-level loop (the chunk loops; after the matmul schedule): an op with static loop ranges, a parallel outermost
    loop and at least `min-chunk-work` iterations in all is tiled along
    that loop into an `scf.forall` of up to `max-chunks` chunks of at least
    `min-chunk-work` iterations each. `scf-forall-to-parallel` and OpenMP
    run the chunks on the step's threads; `tgc-outline-loop-nests` puts each
    chunk's body in its own function whose buffers are `noalias`, so LLVM
    vectorises the chunks as it vectorised the whole loop (parallel loops
    without that ran one thread 70% slower). Small ops stay sequential: a
    fork and join costs more than they do. Matmuls are left to
    `tgc-vectorize-matmuls`.
  }];
  let options = [
    Option<"minChunkWork", "min-chunk-work", "int64_t", "32768",
           "Fewest iterations of a chunk (and of an op worth splitting)">,
    Option<"maxChunks", "max-chunks", "int64_t", "16",
           "Most chunks per op">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::affine::AffineDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TGCVectorizeTransposesPass : Pass<"tgc-vectorize-transposes", "::mlir::ModuleOp"> {
  let summary = "Transposes f32 matrices (or widens narrow ones to f32 while transposing) in 16 x 16 register blocks";
  let description = [{
    A `linalg.transpose` of a static f32 matrix (a weight transposed for a
    product whose operand layout the schedule does not read in place)
    lowered as loops reads a column of the source per output row: LLVM
    vectorises it with gathers, each touching sixteen cache lines for one
    vector. Here the matrix's whole 16 x 16 blocks are read a row of
    sixteen floats at a time, transposed in registers
    (`vector.transpose`, lowered by unpacks and shuffles) and written a row
    at a time, in an `scf.forall` over strips of sixteen source rows (the
    step's threads share them). The rows and columns past the last whole
    block stay `linalg.transpose`s of subviews. The same for the
    `linalg.generic` that widens a bf16/f16 matrix into an f32 one while
    transposing it (`tgc-vectorize-matmuls` makes it of a transposed
    narrow weight that products read widened): each block is widened as
    it is read. Runs after `tgc-vectorize-matmuls`, which reads some
    transposed operands in place instead.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def TGCReassociateReductionsPass : Pass<"tgc-reassociate-reductions", "::mlir::ModuleOp"> {
  let summary = "Lets LLVM vectorise the step's floating-point reductions";
  let description = [{
    In each `linalg.generic` with a reduction loop, the float op that
    combines the accumulator (its output's block argument) with the next
    value (`arith.addf`, `mulf`, `maximumf`, `minimumf`, `maxnumf`,
    `minnumf`) gets the `reassoc` fast-math flag. Without it LLVM must add
    in the loop's order and keeps such loops scalar: RMSNorm's and
    LayerNorm's row sums, the global gradient norm (one serial loop over
    every gradient before the optimizer, which the other threads waited
    for), the cross-entropy's sums. With it a sum runs in vector lanes and
    is combined at the end, which changes its rounding by a few ulps of
    the sum (the same for every run of one executable). Only the combining
    op is marked: the rest of the body keeps its strict semantics.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // TGC_TARGET_CPU_PASSES_TD
