//===- Passes.td - tg dialect passes -----------------------*- tablegen -*-===//

#ifndef TGC_DIALECT_TG_TRANSFORMS_PASSES_TD
#define TGC_DIALECT_TG_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TGLoraPass : Pass<"tg-lora", "::mlir::ModuleOp"> {
  let summary = "Adds LoRA adapters beside linear layers and freezes the rest";
  let description = [{
    Runs on the forward function (`@forward` by default) first of all;
    tgc adds it for `--lora-r` (the model file's `training.lora`). It
    follows Hugging Face PEFT's `LoraConfig`: a module is the parameter
    `NAME.weight` of a product (`tg.linear`, `tg.matmul` reading a
    Conv1D weight stored [in, out], PEFT's `fan_in_fan_out`, one
    expert's weight of a `tg.grouped_matmul`, or a table `tg.embedding`
    looks up: PEFT's lora.Embedding, adapters `NAME.lora_embedding_A`
    [r, V] and `_B` [D, r]), and it is
    targeted when `NAME` equals one of `targets` or ends with "." and one
    of them (with `layers`, only in those layers), or when the whole of it
    matches `target-pattern`; `all-linear` targets every product but the
    one that feeds the loss; `exclude` and `exclude-pattern` remove
    modules. Each targeted module gets the parameters `NAME.lora_A.weight`
    [r, in] and `NAME.lora_B.weight` [out, r] right after its weight, and
    each of its products `y` becomes `y + ((x·Aᵀ)·s)·Bᵀ` with
    s = alpha / r (alpha / sqrt(r) with `rslora`); an expert's grouped
    product gains `y + grouped(grouped(x, A_e)·s, B_e)` over its routed
    rows, zero adapters for the experts not targeted; the rank-pattern and
    alpha-pattern keys give some modules another r or alpha. Every other
    parameter gets `tg.frozen` (as from tg-freeze).

    A target that matches no module, a pattern that selects a module that
    is neither a linear layer nor an embedding, a rank outside
    1..min(in, out) of a targeted module, pattern keys that match nothing or
    disagree on a module, and an exclusion that excludes nothing are
    errors.

    ```mlir
    %y = tg.linear %x, %w : tensor<2x8x64xf32>, tensor<32x64xf32> -> tensor<2x8x32xf32>
    ```
    with `rank=4 alpha=8 targets=q_proj` and `%w` named
    `layers.0.q_proj.weight` becomes
    ```mlir
    %y = tg.linear %x, %w : ...
    %t = tg.linear %x, %a : tensor<2x8x64xf32>, tensor<4x64xf32> -> tensor<2x8x4xf32>
    %s = tg.scale %t {factor = 2.0 : f64} : tensor<2x8x4xf32>
    %u = tg.linear %s, %b : tensor<2x8x4xf32>, tensor<32x4xf32> -> tensor<2x8x32xf32>
    %z = tg.add %y, %u : ...
    ```
  }];
  let options = [
    Option<"rank", "rank", "int64_t", "0",
           "Adapter rank r (0: no adapters)">,
    Option<"alpha", "alpha", "double", "8.0",
           "lora_alpha: the low-rank path is scaled by alpha / r">,
    Option<"rslora", "rslora", "bool", "false",
           "Scale by alpha / sqrt(r) (PEFT's use_rslora)">,
    ListOption<"targets", "targets", "std::string",
               "Module names or suffixes to adapt (PEFT's target_modules), "
               "or all-linear">,
    Option<"targetPattern", "target-pattern", "std::string", "",
           "A regular expression of whole module names to adapt instead "
           "(target_modules as a string)">,
    ListOption<"layers", "layers", "int64_t",
               "Adapt the list targets in these layers only "
               "(layers_to_transform)">,
    ListOption<"layersPattern", "layers-pattern", "std::string",
               "Module lists whose index is the layer (layers_pattern)">,
    ListOption<"exclude", "exclude", "std::string",
               "Module names or suffixes not to adapt (exclude_modules)">,
    Option<"excludePattern", "exclude-pattern", "std::string", "",
           "A regular expression of whole module names not to adapt">,
    ListOption<"rankPatternKeys", "rank-pattern-keys", "std::string",
               "rank_pattern's keys, each with the rank at its position in "
               "rank-pattern-ranks">,
    ListOption<"rankPatternRanks", "rank-pattern-ranks", "int64_t",
               "rank_pattern's ranks">,
    ListOption<"alphaPatternKeys", "alpha-pattern-keys", "std::string",
               "alpha_pattern's keys, each with the alpha at its position "
               "in alpha-pattern-alphas">,
    ListOption<"alphaPatternAlphas", "alpha-pattern-alphas", "double",
               "alpha_pattern's alphas">,
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "Name of the forward function">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGNarrowFrozenPass : Pass<"tg-narrow-frozen", "::mlir::ModuleOp"> {
  let summary = "Keeps frozen weight matrices in bf16 (or f16)";
  let description = [{
    Runs on the forward function (`@forward` by default) after tg-lora and
    tg-freeze; tgc adds it for `--frozen-dtype=bf16`, and for the
    generation program's `@prefill` and `@decode` (whose parameters are all
    frozen) with `--precision=bf16-mixed`. Every frozen
    (`tg.frozen`) rank-2 f32 argument that only matrix products read as
    their weight (`tg.linear`'s weight, `tg.matmul`'s right operand), none
    of which feeds the loss, becomes an argument of `element-type`: the
    runtime stores it so, at half the bytes, and each of its products casts
    its other operands to that type and accumulates in f32, as
    tg-mixed-precision's products do. Embedding tables, norm weights,
    biases and the output layer that feeds the loss keep f32. Functions
    that share parameters (the generation program's steps) narrow the same
    ones: those every function reads only through such products.

    ```mlir
    func.func @forward(%w: tensor<32x64xf32> {tg.frozen, tg.param = "q.weight"}, ...)
      %y = tg.linear %x, %w : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    ```
    becomes
    ```mlir
    func.func @forward(%w: tensor<32x64xbf16> {tg.frozen, tg.param = "q.weight"}, ...)
      %xl = tg.cast %x : tensor<8x64xf32> -> tensor<8x64xbf16>
      %y = tg.linear %xl, %w : tensor<8x64xbf16>, tensor<32x64xbf16> -> tensor<8x32xf32>
    ```
  }];
  let options = [
    Option<"elementType", "element-type", "::mlir::tg::LowPrecisionType",
           "::mlir::tg::LowPrecisionType::None",
           "The frozen weights' type (none: f32, no change)",
           "TG_LOW_PRECISION_TYPE_CL_VALUES">,
    ListOption<"functions", "functions", "std::string",
               "The functions to narrow, parameters matched by their "
               "`tg.param` names (default: forward)">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGFreezePass : Pass<"tg-freeze", "::mlir::ModuleOp"> {
  let summary = "Marks the parameters a regular expression names as frozen";
  let description = [{
    Runs on the forward function (`@forward` by default) before
    `tg-autodiff`; tgc adds it for `--freeze=REGEX` (the model file's
    `training.freeze`). Every argument whose `tg.param` name matches
    `pattern` as a whole (Python's `re.fullmatch`; ECMAScript syntax, see
    `tgc::NamePattern`) gets the unit attribute `tg.frozen`. tg-autodiff
    then treats it as a constant: it gets no gradient, nothing is computed
    for gradients that would reach only frozen parameters, and tg-optimizer
    gives it no state and no update. The runtime still loads and saves it.

    A pattern that is not a regular expression, one that matches no
    parameter (a misspelt name would otherwise train everything) and one
    that matches every parameter (nothing to train) are errors.

    ```mlir
    func.func @forward(%w0: tensor<4x8xf32> {tg.param = "layers.0.weight"},
                       %w1: tensor<2x4xf32> {tg.param = "layers.1.weight"}, ...)
    ```
    with `pattern=layers\.0\..*` becomes
    ```mlir
    func.func @forward(%w0: tensor<4x8xf32> {tg.frozen, tg.param = "layers.0.weight"},
                       %w1: tensor<2x4xf32> {tg.param = "layers.1.weight"}, ...)
    ```
  }];
  let options = [
    Option<"pattern", "pattern", "std::string", "\"\"",
           "Freeze the parameters whose whole name matches this regular "
           "expression (empty: none)">,
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "Name of the forward function">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGAutodiffPass : Pass<"tg-autodiff", "::mlir::ModuleOp"> {
  let summary = "Generates the reverse graph: @forward → @train_step";
  let description = [{
    Adds `@train_step` beside the forward function (`@forward` by default):
    same arguments, results `(loss, dL/dp for every trainable tg.param p)`
    in parameter order. The forward ops are copied, then the pass seeds dL/dloss = 1 and
    walks them in reverse, asking each op for its vector-Jacobian product
    through `GradientOpInterface`; it never looks at op kinds. Gradients of
    values used more than once (residual streams, tied embeddings, Q/K/V
    reading one normalised input) are summed with `tg.add`.

    Activity analysis: only values that depend on a trainable parameter
    get gradients, so nothing is computed for token ids, labels or input
    features, and the backward sweep stops where no trainable parameter
    lies below (an MLP's first layer computes dW but no input gradient). A
    parameter the loss does not depend on gets a zero gradient.

    Frozen parameters (`tg.frozen`, set by tg-freeze) are constants to the
    analysis: they get no gradient result, and no gradient is built that
    would flow only to them. A linear layer with a frozen weight computes
    its input's gradient when a trainable parameter lies upstream, but no
    weight-gradient product; a frozen embedding table gets no
    `tg.embedding_grad`; the layers below the last trainable one get no
    backward pass at all.

    Before (`tgc-opt --tg-autodiff`):
    ```mlir
    func.func @forward(%w: tensor<4x8xf32> {tg.param = "w"},
                       %x: tensor<2x8xf32> {tg.input = "x"}, ...) -> tensor<f32>
    ```
    After, in addition:
    ```mlir
    func.func @train_step(%w: ..., %x: ..., ...) -> (tensor<f32>, tensor<4x8xf32>)
      // forward ops, then e.g.
      %dy = tg.cross_entropy_grad %one, %y, %labels ...
      %dw = tg.matmul %dy, %x {transpose_lhs} ...
      return %loss, %dw
    ```
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "Name of the forward function to differentiate">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "Name of the generated function">,
    Option<"lossScale", "loss-scale", "bool", "false",
           "Seed the reverse sweep with a 0-d input `loss_scale` instead of "
           "1: every gradient comes out scaled by it (loss scaling)">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGFusePass : Pass<"tg-fuse", "::mlir::ModuleOp"> {
  let summary = "Fuses forward-graph patterns into ops with their own gradient rules";
  let description = [{
    Runs on every function of the module; tgc runs it on `@forward` before
    `tg-autodiff`, so each fused op brings its own gradient rule (and cost)
    into the reverse graph.

    * `linear-cross-entropy`: `tg.cross_entropy` of a `tg.linear` whose
      result nothing else reads (the LM head, an MLP's last layer) becomes
      `tg.linear_cross_entropy`, which computes the loss and the gradients
      of the input, weight and bias in one sweep over `chunk_rows` rows at a
      time: the logits and their gradient never exist whole, nothing is
      recomputed, and the backward pass keeps the input's gradient
      (`[rows, D]`) instead of the logits (`[rows, V]`). Applied when
      `V >= D` (language-model heads; a classifier with fewer classes than
      inputs keeps the smaller logits). Chunks hold at most `chunk-bytes` of
      logits but at least `min-chunk-rows` rows (the weight gradient is
      accumulated once per chunk, so fewer, larger chunks move less memory),
      and the rows are split into that many chunks of balanced sizes.

    Before:
    ```mlir
    %logits = tg.linear %h, %w : tensor<4x64xf32>, tensor<50257x64xf32> -> tensor<4x50257xf32>
    %loss = tg.cross_entropy %logits, %t : tensor<4x50257xf32>, tensor<4xi32> -> tensor<f32>
    ```
    After:
    ```mlir
    %loss, %dh, %dw = tg.linear_cross_entropy %h, %w, %t {chunk_rows = 4 : i64}
        : tensor<4x64xf32>, tensor<50257x64xf32>, tensor<4xi32>
        -> tensor<f32>, tensor<4x64xf32>, tensor<50257x64xf32>
    ```
  }];
  let options = [
    Option<"linearCrossEntropy", "linear-cross-entropy", "bool", "true",
           "Fuse the vocabulary projection with the cross-entropy">,
    Option<"chunkBytes", "chunk-bytes", "int64_t", "64 << 20",
           "Most bytes of logits in one chunk">,
    Option<"minChunkRows", "min-chunk-rows", "int64_t", "256",
           "Fewest rows in one chunk (when there are that many)">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGAccumulateGradientsPass
    : Pass<"tg-accumulate-gradients", "::mlir::ModuleOp"> {
  let summary = "Gradient accumulation over micro-batches inside one step";
  let description = [{
    Run right after tg-autodiff. `@train_step(params, inputs[B]...) ->
    (loss, grads)` becomes a step over `micro-batches` × B rows: every
    `tg.input` gains that many rows along dimension 0, and the forward and
    reverse graph run once per micro-batch of B rows on a slice of them,
    one after the other, the gradients (and the loss) summed and divided by
    the number of micro-batches. Each micro-batch's activations die before
    the next one's forward pass, so activation memory is that of B rows
    while the update sees all of them: the same loss and gradients as a
    batch of micro-batches × B rows (each micro-batch's loss is a mean over
    its own tokens; the two agree when every micro-batch counts the same
    number, as the runtime's batches do).

    The step's ABI does not change shape: its inputs are simply larger (the
    executable reads micro-batches × B rows per step). The graph is
    unrolled (compile time grows with the count), and the optimizer, remat,
    data parallelism (one collective per gradient, after the last
    micro-batch) and fusion apply to the result as to any step.
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Micro-batches per step (1: no change)">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "Name of the function to rewrite">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGDataParallelPass : Pass<"tg-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Sums each gradient over all processes (data parallelism)";
  let description = [{
    Run between tg-autodiff and tg-optimizer. Every process runs the same
    step on its own slice of the global batch; this pass makes each
    gradient `@train_step` returns the global one: `Σ_ranks weight · g`,
    where `weight` is a new 0-d f32 input (`tg.input = "dp_weight"`), the
    process's count of loss tokens over the global count, which the
    runtime computes for each batch. Each gradient gets a
    `tg.all_reduce_start` right after the op that completes it, so
    communication for late layers overlaps the backward pass of early ones,
    and a `tg.collective_wait` before it is returned; tg-schedule-updates
    then lets each wait trail its start by one gradient, so that the
    optimizer update of each parameter waits for its own collective only.

    Gradients smaller than `bucket-bytes` share collectives: consecutive
    ones (in the order the backward pass completes them) form buckets of at
    most that many bytes, started when the last of them is complete — fewer,
    larger messages for norm weights and biases; a larger gradient is a
    bucket of its own (and is summed in place, without a copy).

    The loss stays the process's own (the runtime sums `weight · loss` over
    processes for the log). With one process and `weight` 1 the step
    computes exactly what it computes without this pass.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "1048576",
           "Gradients smaller than this share collectives, up to this many "
           "bytes per bucket (0: one collective per gradient)">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "Name of the function to rewrite">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGOptimizerPass : Pass<"tg-optimizer", "::mlir::ModuleOp"> {
  let summary = "Appends the optimizer update to @train_step";
  let description = [{
    Turns `@train_step(params..., inputs...) -> (loss, grads...)` into
    `@train_step(params..., state..., inputs..., lr, step)
        -> (loss, grad_norm, new_params..., new_state...)`
    where `lr` and `step` (1-based) are 0-d f32 tensors supplied by the
    runtime each step. With `grad-clip` > 0 the gradients are first scaled by
    `min(1, grad-clip / (‖g‖ + 1e-6))`, ‖g‖ the global L2 norm over all
    gradients (as `torch.nn.utils.clip_grad_norm_`); `grad_norm` is the norm
    before clipping either way, from one `tg.sum_squares` per gradient so
    that tg-schedule-updates can run each as soon as its gradient exists.

    * `sgd`: `p ← p − lr (g + weight_decay p)`; with `momentum` > 0 one
      momentum buffer per parameter (`tg.state = "momentum_buffer.<name>"`).
    * `adamw`: bias-corrected Adam with decoupled weight decay, two f32
      moments per parameter (`tg.state = "exp_avg.<name>"` and
      `"exp_avg_sq.<name>"`), as `torch.optim.AdamW`.

    With `return-gradients` the unclipped gradients follow (`tg.grad`).

    Frozen parameters (`tg.frozen`, which tg-autodiff gives no gradient)
    stay arguments but get no state, no update and no part in the global
    norm or the clipping: `new_params` and the state cover the trainable
    parameters only (the state arguments still follow every parameter).

    With `loss-scaling` (static or dynamic) the gradients arrive multiplied
    by the `loss_scale` input, which becomes the state `loss_scale` (with a
    second one, `loss_scale_growth_tracker`); `tg.loss_scale_update` gives
    `1 / loss_scale`, the skip flag (the scaled norm is not finite) and the
    next scale. Every update takes the skip flag (an overflowed step leaves
    parameters and state as they were), its gradient is multiplied by
    `1 / loss_scale` (times the clip factor), and `grad_norm` is the
    unscaled norm. Every update then waits for the global norm, as with
    clipping. Either way the step also returns each gradient's sum of
    squares (outputs `grad_sumsq.<parameter>`), so that the runtime can
    name the gradients that are not finite.

    With `guard-updates` and no loss scaling, `tg.not_finite` of the norm is
    that skip flag: a step whose gradients (or loss) are not finite writes
    no parameter and no state, and the runtime stops with the weights of
    the step before. Without clipping this makes every update wait for the
    norm, so gradients no longer die one by one (tg-schedule-updates).
    New parameters and state are returned in argument order, so the runtime
    (and, once bufferized, the compiled code) updates them in place.
  }];
  let options = [
    Option<"optimizer", "optimizer", "::mlir::tg::OptimizerKind",
           "::mlir::tg::OptimizerKind::AdamW", "sgd or adamw",
           "TG_OPTIMIZER_KIND_CL_VALUES">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "Name of the function to extend">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW β1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW β2">,
    Option<"eps", "eps", "double", "1e-8", "AdamW ε">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "Decoupled weight decay (AdamW) or L2 weight decay (SGD)">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"gradClip", "grad-clip", "double", "0.0",
           "Clip gradients to this global L2 norm (0: off)">,
    Option<"returnGradients", "return-gradients", "bool", "false",
           "Also return the (unclipped) gradients, after the new state, "
           "for inspection (e.g. the runtime's --dump-grads)">,
    Option<"lossScaling", "loss-scaling", "::mlir::tg::LossScaling",
           "::mlir::tg::LossScaling::None",
           "none; static or dynamic: the gradients were scaled by the "
           "`loss_scale` input (tg-autodiff loss-scale=true), which becomes "
           "optimizer state; they are unscaled, and a step whose gradients "
           "overflowed is skipped (dynamic: the scale halves, and doubles "
           "after growth-interval clean steps)",
           "TG_LOSS_SCALING_CL_VALUES">,
    Option<"lossScaleGrowthInterval", "loss-scale-growth-interval", "int64_t",
           "2000", "Clean steps before a dynamic loss scale doubles">,
    Option<"guardUpdates", "guard-updates", "bool", "false",
           "Skip every update of a step whose gradient norm is not finite "
           "(loss scaling always does)">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGShardOptimizerPass : Pass<"tg-shard-optimizer", "::mlir::ModuleOp"> {
  let summary = "ZeRO-1: each process keeps and updates a shard of the "
                "optimizer state";
  let description = [{
    Run right after tg-optimizer on a data-parallel step (tg-data-parallel
    before it). For `processes` = N, each parameter's optimizer state
    becomes this process's shard, a 1-d tensor of `S = ⌈numel / N⌉` f32
    elements (the arguments and results marked `tg.state` change type and
    gain `tg.shard_of = "<parameter>"`), and each bucket's collectives
    become:

    * `tg.reduce_scatter_start` instead of `tg.all_reduce_start`: the
      process receives only its shard of each summed gradient (half the
      traffic of an all-reduce);
    * the update (`tg.adamw_update`, ...) runs on the shards: the gradient
      shard, `tg.shard` of the parameter and the state shard;
    * `tg.all_gather_start` writes every process's updated shard into the
      whole parameter, in place, after the bucket's last update.

    The global norm sums each process's sums of squares of its gradient
    shards over the processes (`tg.sum_over_processes`). Elementwise, the
    update computes what the all-reduced step computes; the optimizer state
    per process falls by N. `@train_step` gets `tg.processes = N`: the
    executable runs only as N processes.
  }];
  let options = [
    Option<"processes", "processes", "int64_t", "2",
           "Processes the optimizer state is sharded over (mpirun -np)">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "Name of the function to rewrite">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGShardParametersPass : Pass<"tg-shard-parameters", "::mlir::ModuleOp"> {
  let summary = "ZeRO-3: each process holds a shard of every parameter and "
                "gathers whole ones for their readers";
  let description = [{
    Runs last on the training graph, on a step tg-shard-optimizer sharded
    (`tg.processes = N`), after remat and tg-schedule-updates, so that it
    sees the final order of the readers. Each f32 parameter argument (and
    each frozen one of another float type, tg-narrow-frozen's bf16 weights)
    becomes this process's shard, a 1-d tensor of `S = ⌈numel / N⌉`
    elements (`tg.sharded = <whole type>` on the argument and its new
    value): the update writes the shard in place, and ZeRO-1's all-gather
    of the updated shards into whole parameters goes.

    The ops that read a whole parameter get it from a
    `tg.parameter_gather_start` / `tg.collective_wait` pair. Parameters are
    grouped into units as FSDP wraps modules: the name up to its first
    numeric component (`model.layers.3`), or the whole name for the others
    (`model.embed_tokens.weight`). Each maximal run of readers of one unit,
    in program order, gathers that unit's parameters it reads once (one
    bucket): the forward pass of a layer, its backward pass (with the ops
    remat recomputes there), each micro-batch's. The wait comes right
    before the run; the start comes `prefetch` runs earlier (right after
    the wait of the run `prefetch` before it), so the next layers' gathers
    overlap the current layer's compute. The gathered tensors are
    intermediates of the arena: each run ahead keeps one more run's whole
    weights alive.

    With `prefetch=-1` (the default) a planner chooses each run's lead, 1
    to `max-prefetch` (tgc/Dialect/TG/Analysis/GatherPrefetch.h). It
    replays the step on a time model: each op's FLOPs (CostOpInterface) at
    `compute-rate`, and a gather's bytes received, `(N-1)/N` of the whole,
    at `gather-bandwidth` on one link that carries the gathers in order.
    A gather starts further ahead only where that hides more of its
    transfer, e.g. the vocabulary projection's behind the layer before the
    final norm. The choice and the estimate go on the step as
    `tg.gather_prefetch` (read by `tgc stats`).

    An update is moved past the last gather that reads its shard (the
    readers of a parameter run before its in-place update).
  }];
  let options = [
    Option<"prefetch", "prefetch", "int64_t", "-1",
           "Runs ahead of its readers each gather starts (>= 0); -1: "
           "planned">,
    Option<"maxPrefetch", "max-prefetch", "int64_t", "2",
           "With prefetch=-1: the most runs ahead a gather starts (>= 1)">,
    Option<"gatherBandwidth", "gather-bandwidth", "double", "10.0",
           "With prefetch=-1: GB/s a process receives gathers at">,
    Option<"computeRate", "compute-rate", "double", "50.0",
           "With prefetch=-1: GFLOP/s a process computes the step at">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "Name of the function to rewrite">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGKeepGatheredParametersPass
    : Pass<"tg-keep-gathered-parameters", "::mlir::ModuleOp"> {
  let summary = "ZeRO-3 under a memory budget: later readers reuse weights "
                "an earlier gather brought instead of gathering them again";
  let description = [{
    Runs after tg-shard-parameters. A gather whose every parameter an
    earlier gather of the same element type brought (a layer's backward
    pass after its forward pass) can read those tensors instead: one
    collective less, and the earlier tensors live until the later readers.
    The pass takes such gathers nearest to their earlier one first (the
    last layers' backward passes, whose forward weights are alive the
    shortest), each only while the step's planned peak (the arena plan of
    tgc/Dialect/TG/Analysis/MemoryPlan.h) stays within `budget` bytes.
    Without a budget (`-1`) it changes nothing.
  }];
  let options = [
    Option<"budget", "budget", "int64_t", "-1",
           "Bytes the planned peak may reach (-1: none)">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "Name of the function to rewrite">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGShardAccumulatedGradientsPass
    : Pass<"tg-shard-accumulated-gradients", "::mlir::ModuleOp"> {
  let summary = "ZeRO-3 with micro-batches: each micro-batch's gradients "
                "reduce-scattered, their shards accumulated";
  let description = [{
    Runs on a step tg-accumulate-gradients unrolled and tg-shard-optimizer
    sharded, after tg-schedule-updates placed its collectives (tgc runs it
    for `--zero=3 --grad-accum=K`). There, each bucket's reduce-scatter
    sums the mean of the micro-batches' gradients: the whole gradients of
    micro-batch k are kept, and added up, until the last micro-batch ends.
    This pass scatters each micro-batch's gradients instead, as soon as the
    bucket is complete in that micro-batch, and adds up the shards:

    ```mlir
    %sum = tg.add %g0, %g1 ...   %mean = tg.mul %sum, %inv_k ...
    %s, %shard, %r = tg.reduce_scatter_start(%mean) ...
    ```

    becomes one `tg.reduce_scatter_start(%gk)` per micro-batch, each waited
    for right after the next collective starts (as tg-schedule-updates
    places waits), and `tg.mul (%shard0 + %shard1 ...), %inv_k` read where
    the old shard was. A process then holds a bucket or two of whole
    gradients at a time, and the accumulated ones in shards (1/N of them),
    for K times the reduce-scatter traffic, as FSDP's accumulation without
    `no_sync` does. Buckets of another form are left as they are.
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Micro-batches per step, as tg-accumulate-gradients had (1: no "
           "change)">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "Name of the function to rewrite">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGMixedPrecisionPass : Pass<"tg-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Mixed precision: matrix products on bf16/f16 operands, "
                "accumulated in f32";
  let description = [{
    Runs on every function of the module; tgc runs it on `@forward` after
    `tg-fuse` and before `tg-autodiff` for `--precision=bf16-mixed`. Each
    f32 `tg.linear` and `tg.matmul` takes its operands through `tg.cast` to
    the low-precision type and keeps its f32 result (products accumulate in
    f32); every other op — norms, softmax, attention, RoPE, activations,
    residual adds, the loss and its fused LM head — stays f32, and so do the
    parameters (the f32 masters the optimizer updates). Each value is cast
    once, right before its first product, and shared by later products. The
    casts of function arguments (weights, the input batch) are marked
    `tg.remat = "recompute"`: tg-remat remakes each weight's bf16 copy where
    the backward pass needs it instead of keeping a copy of every weight
    alive across the step (for a 1.1B model at batch 1 that copy is 2 GiB,
    more than the saved activations).

    The products' gradient rules take the upstream gradient in the low type,
    accumulate in f32 and round each operand's gradient once; the casts'
    rules widen them back to f32 (as PyTorch's autocast does). What the
    backward pass keeps of a product's inputs is the low-precision copy, so
    their memory halves.

    Before:
    ```mlir
    %y = tg.linear %x, %w : tensor<8x64xf32>, tensor<32x64xf32> -> tensor<8x32xf32>
    ```
    After:
    ```mlir
    %xl = tg.cast %x : tensor<8x64xf32> -> tensor<8x64xbf16>
    %wl = tg.cast %w : tensor<32x64xf32> -> tensor<32x64xbf16>
    %y = tg.linear %xl, %wl : tensor<8x64xbf16>, tensor<32x64xbf16> -> tensor<8x32xf32>
    ```
  }];
  let options = [
    Option<"elementType", "element-type", "::mlir::tg::LowPrecisionType",
           "::mlir::tg::LowPrecisionType::BF16",
           "Operand type of the products (none: no change)",
           "TG_LOW_PRECISION_TYPE_CL_VALUES">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGLowPrecisionSavesPass : Pass<"tg-low-precision-saves", "::mlir::ModuleOp"> {
  let summary = "Mixed precision: the saved activations kept in bf16/f16";
  let description = [{
    Runs on every function with a reverse graph (the forward slice of the
    loss, as `tg-remat` sees it); tgc runs it on `@train_step` right after
    `tg-remat` for `--precision=bf16-mixed` and `fp16-mixed`. Each f32
    forward value that the reverse graph reads (a saved activation, after
    rematerialisation chose what to keep) is kept as a low-precision copy
    made in the forward pass, right after the value, and widened back to
    f32 in the reverse graph before its first reader there: what lives
    across the step is half the bytes. Recomputed forward ops read the
    widened copy, so they remake their values from what was kept.

    The forward pass is unchanged: only the reverse graph reads rounded
    values. A value that already has a low-precision copy (a product's
    operand, or a product's operand reshaped) reuses it.
    Kept at f32: 0-d values, what the terminator returns, and the results
    an op declares through `keepsResultAtFullPrecision` (attention's
    logsumexp, the gradients that `tg.linear_cross_entropy` makes in the
    forward sweep).

    Before:
    ```mlir
    %g = tg.linear %x, %w : ... -> tensor<8x32xf32>
    %s = tg.silu %g : tensor<8x32xf32>
    ...
    %dg = tg.silu_grad %ds, %g : tensor<8x32xf32>
    ```
    After:
    ```mlir
    %g = tg.linear %x, %w : ... -> tensor<8x32xf32>
    %gl = tg.cast %g : tensor<8x32xf32> -> tensor<8x32xbf16>
    %s = tg.silu %g : tensor<8x32xf32>
    ...
    %gw = tg.cast %gl : tensor<8x32xbf16> -> tensor<8x32xf32>
    %dg = tg.silu_grad %ds, %gw : tensor<8x32xf32>
    ```
  }];
  let options = [
    Option<"elementType", "element-type", "::mlir::tg::LowPrecisionType",
           "::mlir::tg::LowPrecisionType::BF16",
           "Type the saved activations are kept in (none: as they are)",
           "TG_LOW_PRECISION_TYPE_CL_VALUES">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGScheduleUpdatesPass : Pass<"tg-schedule-updates", "::mlir::ModuleOp"> {
  let summary = "Optimizer in the backward sweep: each update right after its "
                "gradient";
  let description = [{
    Moves each parameter's optimizer work in `@train_step` — its gradient's
    `tg.sum_squares` and its update (`tg.sgd_update`,
    `tg.sgd_momentum_update`, `tg.adamw_update`) — to the earliest point the
    graph allows: after the ops that define its operands and after every
    other reader of the parameter and its optimizer state. The gradient
    then dies as soon as its update has run instead of living to the end
    of the step, so the gradients are no longer all alive at once (unless
    the step returns them, `return-gradients`), and each update still reads
    nothing it has overwritten, so it updates in place.

    With data parallelism (tg-data-parallel) each gradient's
    `tg.all_reduce_start` moves right after the op that completes it and its
    `tg.collective_wait` right after the next gradient's start, so that
    communication overlaps the backward pass while at most two collectives
    are in flight; the update follows its own wait.

    Nothing is recomputed and no value changes: the step computes the same
    numbers in another order. With global-norm clipping every update waits
    for the norm of all gradients, so only the sums of squares move; the
    updates stay at the end (the clipping factor orders them).

    Idempotent, and safe to run after `tg-remat`, which may add readers of
    a parameter (recomputed forward ops) after its update: the update moves
    after them.
  }];
  let options = [
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "Name of the function to reorder">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

def TGRematPass : Pass<"tg-remat", "::mlir::ModuleOp"> {
  let summary = "Rematerialisation: keep or recompute each saved activation";
  let description = [{
    Decides, for every forward value that `@train_step`'s reverse graph reads
    (a saved activation), whether to keep it alive from the forward pass to
    its use or to recompute it there. Recomputed forward ops are cloned into
    the reverse graph right before their first use and marked
    `tg.recomputed`; the originals then die as soon as the forward pass is
    done with them. The numbers are those of the memory planner
    (`MemoryPlan.h`), which also places the compiled step's buffers.

    Policies (`policy`):
    * `none`: keep everything (no change).
    * `layers`: activation checkpointing per transformer layer (ops tagged
      `tg.layer` by the front end): keep each layer's input, recompute the
      rest of the layer in the backward pass — about one extra forward pass.
    * `selective`: keep the outputs of weight matmuls (`tg.linear`,
      `tg.matmul`) and recompute the rest (elementwise ops, norms, RoPE,
      reshapes, the attention core as in Megatron's selective
      recomputation) where that keeps fewer bytes — a minimum cut with the
      matmuls pinned.
    * `budget` (needs `memory-budget`): the fewest extra FLOPs whose planned
      peak of the whole step fits the budget. Candidates are the minimum cuts
      of `bytes kept + λ·FLOPs recomputed` for λ from 2^-20 to 2^12 bytes per
      FLOP (the Lagrangian of the budget constraint), the per-layer
      checkpoint plans and `selective`; each is applied to a copy of the
      step and planned exactly. Plans that recompute a matmul are used only
      when no other plan fits. Fails with the smallest reachable peak when
      nothing fits. As the budget falls the chosen peak never rises.

    With `fused-recompute` (set when fusion is on), policy `none` still
    recomputes the values a fused backward kernel remakes from what the
    reverse graph keeps anyway: forward ops of at most 16 FLOPs per result
    element (elementwise ops, norms, gathers; never products or attention)
    whose operands are all kept anyway, e.g. SiLU(gate) and SiLU(gate)·up
    from the kept gate and up projections, or RMSNorm's output from its
    kept input. They add FLOPs but keep nothing new alive; the set is used
    only when it lowers the planned peak.

    With `saved-element-type` (mixed precision) every plan counts the saved
    activations in bf16/f16, as `tg-low-precision-saves` keeps them after
    this pass: the budget applies to the step as it will run.

    `tg.remat = "save"` or `"recompute"` on a forward op wins over every
    policy. With `report` each decision (value, bytes, FLOPs, why) goes to
    stderr.

    Run it last on the tg graph: CSE would merge the clones back into the
    forward ops.
  }];
  let options = [
    Option<"policy", "policy", "::mlir::tg::RematPolicy",
           "::mlir::tg::RematPolicy::None", "none, layers, selective or budget",
           "TG_REMAT_POLICY_CL_VALUES">,
    Option<"memoryBudget", "memory-budget", "std::string", "\"\"",
           "Budget for the planned peak of intermediates: bytes (1.5GiB, "
           "800MB) or a fraction of the planned peak of policy none "
           "(0.4, 40%)">,
    Option<"report", "report", "bool", "false",
           "Print every decision to stderr">,
    Option<"fusedRecompute", "fused-recompute", "bool", "false",
           "Under policy none, recompute cheap values from values kept "
           "anyway (fused backward kernels)">,
    Option<"savedElementType", "saved-element-type",
           "::mlir::tg::LowPrecisionType",
           "::mlir::tg::LowPrecisionType::None",
           "Plan for saved activations kept in this type "
           "(tg-low-precision-saves, which runs next); none: as they are",
           "TG_LOW_PRECISION_TYPE_CL_VALUES">,
    Option<"gatheredParameters", "gathered-parameters", "bool", "false",
           "ZeRO-3 (tg-shard-parameters runs later): recompute no cheap "
           "value from a parameter the reverse graph does not read">,
    Option<"trainStepName", "train-step", "std::string", "\"train_step\"",
           "Name of the function to rewrite">,
  ];
  let dependentDialects = ["::mlir::tg::TGDialect"];
}

#endif // TGC_DIALECT_TG_TRANSFORMS_PASSES_TD
