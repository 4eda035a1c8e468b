//===- TGOps.td - tg dialect operations --------------------*- tablegen -*-===//
//
// Ops of the tg dialect, grouped by family. Shape rules live in C++
// (TypeInference.cpp) and are shared by the verifiers and result type
// inference, so an op's checks and its inferred type never disagree.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGOPS_TD
#define TGC_DIALECT_TG_IR_TGOPS_TD

include "tgc/Dialect/TG/IR/TGBase.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "tgc/Dialect/TG/IR/TGInterfaces.td"

// Every operand and result of a tg op has fewer than 2^63 elements (and
// bytes), so element counts and sizes computed from its type fit in int64.
// Listed first so it runs before result type inference is re-checked.
def TG_ElementCountFits : NativeOpTrait<"ElementCountFits"> {
  let cppNamespace = "::mlir::tg";
}

// Facts analyses read instead of lists of op kinds (see TGOps.h).
def TG_StorageView : NativeOpTrait<"StorageView"> { let cppNamespace = "::mlir::tg"; }
def TG_MatrixProduct : NativeOpTrait<"MatrixProduct"> { let cppNamespace = "::mlir::tg"; }
def TG_OptimizerStep : NativeOpTrait<"OptimizerStep"> { let cppNamespace = "::mlir::tg"; }
def TG_ParameterUpdate : NativeOpTrait<"ParameterUpdate"> { let cppNamespace = "::mlir::tg"; }

// Every tg op states its cost (Costs.cpp): no default implementation.
class TG_Op<string mnemonic, list<Trait> traits = []>
    : Op<TG_Dialect, mnemonic,
         !listconcat([TG_ElementCountFits, Pure,
                      DeclareOpInterfaceMethods<TG_CostOpInterface>], traits)>;

// Ops with a vector-Jacobian rule (see GradientRules.cpp).
defvar TG_Differentiable = DeclareOpInterfaceMethods<TG_GradientOpInterface>;
// ... and results the reverse graph reads at full precision under mixed
// precision (statistics, gradients made in the forward sweep).
defvar TG_DifferentiableKeepingFullPrecision = DeclareOpInterfaceMethods<
    TG_GradientOpInterface, ["keepsResultAtFullPrecision"]>;

// Ops whose result type follows from operands and properties.
class TG_InferredOp<string mnemonic, list<Trait> traits = []>
    : TG_Op<mnemonic, !listconcat([InferTypeOpAdaptor], traits)>;

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def TG_ConstantOp : TG_InferredOp<"constant", [ConstantLike]> {
  let summary = "A constant tensor";
  let description = [{
    Materialises a dense tensor constant: position ids, masks, the zeros that
    folding produces.

    Example:
    ```mlir
    %pos = tg.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def TG_ReshapeOp : TG_Op<"reshape", [TG_StorageView, TG_Differentiable]> {
  let summary = "Reinterprets a tensor with a new shape of the same size";
  let description = [{
    Row-major reshape: the result has the operand's elements in the same
    order and the same element type; only the shape changes.

    Example:
    ```mlir
    %q = tg.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_TransposeOp : TG_InferredOp<"transpose", [TG_Differentiable]> {
  let summary = "Permutes the dimensions of a tensor";
  let description = [{
    `result.shape[i] == input.shape[permutation[i]]`.

    Example:
    ```mlir
    %t = tg.transpose %x [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat =
      "$input $permutation attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def TG_BroadcastOp : TG_Op<"broadcast", [TG_Differentiable]> {
  let summary = "Broadcasts a tensor to a larger shape (NumPy rules)";
  let description = [{
    Dimensions are aligned from the right; each operand dimension must equal
    the result's or be 1. Missing leading dimensions are added. The inverse
    for gradients is `tg.reduce_sum` over the broadcast dimensions.

    Example:
    ```mlir
    %b = tg.broadcast %bias : tensor<64xf32> -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def TG_ReduceSumOp : TG_InferredOp<"reduce_sum", [TG_Differentiable]> {
  let summary = "Sums a tensor over some dimensions";
  let description = [{
    Sums over the listed dimensions (sorted, unique, in range). With
    `keep_dims` the reduced dimensions stay with size 1, otherwise they are
    removed.

    Example:
    ```mlir
    %db = tg.reduce_sum %g [0, 1] : tensor<2x8x64xf32> -> tensor<64xf32>
    %s = tg.reduce_sum %g [2] {keep_dims} : tensor<2x8x64xf32> -> tensor<2x8x1xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat =
      "$input $dims attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

def TG_SliceOp : TG_InferredOp<"slice", [TG_StorageView, TG_Differentiable]> {
  let summary = "Takes a contiguous range along one dimension";
  let description = [{
    `result = input[..., start : start + size, ...]` along `axis`. Used to
    split fused projections such as GPT-2's `c_attn` into Q, K and V.

    Example:
    ```mlir
    %k = tg.slice %qkv axis 2 start 64 size 64 : tensor<2x8x192xf32> -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins TG_AnyTensor:$input, I64Prop:$axis, I64Prop:$start,
                       I64Prop:$size);
  let results = (outs TG_AnyTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis `start` $start `size` $size attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def TG_CastOp : TG_Op<"cast", [TG_Differentiable]> {
  let summary = "Converts a float tensor to another float element type";
  let description = [{
    Same shape, new element type: narrowing rounds to nearest even (f32 →
    bf16/f16), widening is exact. Mixed precision (`tg-mixed-precision`)
    places these where values enter and leave low-precision products; the
    gradient is the upstream gradient cast back to the operand's type.

    Example:
    ```mlir
    %h = tg.cast %x : tensor<2x8x64xf32> -> tensor<2x8x64xbf16>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

// Matrix products whose result may be f32 from bf16/f16 operands: the
// result's element type is the accumulation type (mixed precision).
class TG_ProductOp<string mnemonic, list<Trait> traits = []>
    : TG_Op<mnemonic, !listconcat([InferTypeOpAdaptorWithIsCompatible,
                                   TG_MatrixProduct], traits)>;

def TG_MatmulOp : TG_ProductOp<"matmul", [TG_Differentiable]> {
  let summary = "Batched matrix product with optional operand transposes";
  let description = [{
    `lhs` is `[batch..., M, K]` (`[batch..., K, M]` with `transpose_lhs`),
    `rhs` is `[batch..., K, N]` (`[batch..., N, K]` with `transpose_rhs`); the
    result is `[batch..., M, N]`. Batch dimensions must be equal, or one side
    may be a plain matrix that is shared by every batch.

    The result has the operands' element type, or f32 for bf16/f16 operands:
    products are then accumulated and returned in f32 (mixed precision, like
    XLA's `preferred_element_type`). A low-precision result is accumulated in
    f32 too and rounded once.

    Example:
    ```mlir
    %y = tg.matmul %x, %w : tensor<2x8x64xf32>, tensor<64x32xf32> -> tensor<2x8x32xf32>
    %s = tg.matmul %q, %k {transpose_rhs} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x8xf32>
    %m = tg.matmul %a, %b : tensor<8x64xbf16>, tensor<64x32xbf16> -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def TG_LinearOp : TG_ProductOp<"linear", [TG_Differentiable]> {
  let summary = "Affine map x·Wᵀ + b with the Hugging Face weight layout";
  let description = [{
    `input` is `[..., in]`, `weight` is `[out, in]` (as `torch.nn.Linear`
    stores it), the optional `bias` is `[out]`; the result is `[..., out]`.
    All operands share one element type; as for `tg.matmul`, the result may
    be f32 for bf16/f16 operands (accumulated in f32).

    Example:
    ```mlir
    %q = tg.linear %h, %wq : tensor<2x8x64xf32>, tensor<64x64xf32> -> tensor<2x8x64xf32>
    %y = tg.linear %x, %w, %b : tensor<4x784xf32>, tensor<512x784xf32>, tensor<512xf32> -> tensor<4x512xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       Optional<TG_FloatTensor>:$bias);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)? `->` type($result)
  }];
}

// Elementwise binary ops with NumPy broadcasting of either operand.
class TG_BroadcastBinaryOp<string mnemonic, list<Trait> traits = []>
    : TG_InferredOp<mnemonic, traits> {
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasFolder = 1;
}

def TG_AddOp : TG_BroadcastBinaryOp<"add", [Commutative, TG_Differentiable]> {
  let summary = "Elementwise sum with broadcasting";
  let description = [{
    Residual adds and bias adds. Shapes broadcast as in NumPy (aligned from
    the right, size-1 dimensions stretch); the result has the broadcast shape.

    Example:
    ```mlir
    %h = tg.add %x, %attn : tensor<2x8x64xf32>, tensor<2x8x64xf32> -> tensor<2x8x64xf32>
    ```
  }];
}

def TG_SubOp : TG_BroadcastBinaryOp<"sub", [TG_Differentiable]> {
  let summary = "Elementwise difference with broadcasting";
  let description = [{
    `lhs - rhs`, broadcast as for `tg.add`.

    Example:
    ```mlir
    %d = tg.sub %x, %mean : tensor<2x8x64xf32>, tensor<2x8x1xf32> -> tensor<2x8x64xf32>
    ```
  }];
}

def TG_MulOp : TG_BroadcastBinaryOp<"mul", [Commutative, TG_Differentiable]> {
  let summary = "Elementwise product with broadcasting";
  let description = [{
    The gate of SwiGLU and scaling by norm weights, broadcast as for `tg.add`.

    Example:
    ```mlir
    %m = tg.mul %gate, %up : tensor<2x8x172xf32>, tensor<2x8x172xf32> -> tensor<2x8x172xf32>
    ```
  }];
}

// Elementwise ops of one operand whose result has the operand's type.
class TG_UnaryElementwiseOp<string mnemonic, list<Trait> traits = []>
    : TG_Op<mnemonic, !listconcat([Elementwise, SameOperandsAndResultType],
                                  traits)> {
  let arguments = (ins TG_FloatTensor:$input);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def TG_ScaleOp : TG_UnaryElementwiseOp<"scale", [TG_Differentiable]> {
  let summary = "Multiplies every element by a constant";
  let description = [{
    `result = factor * input`, e.g. the 1/sqrt(d) of attention or a mean's
    1/N.

    Example:
    ```mlir
    %y = tg.scale %x {factor = 5.000000e-01 : f64} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, F64Attr:$factor);
  let hasFolder = 1;
}

def TG_ReluOp : TG_UnaryElementwiseOp<"relu", [TG_Differentiable]> {
  let summary = "Rectified linear unit, max(x, 0)";
  let description = [{
    Example:
    ```mlir
    %y = tg.relu %x : tensor<4x512xf32>
    ```
  }];
}

def TG_GeluOp : TG_UnaryElementwiseOp<"gelu", [TG_Differentiable]> {
  let summary = "Gaussian error linear unit (erf or tanh form)";
  let description = [{
    `approximate = "none"` (default) computes `x * Φ(x)` with erf;
    `approximate = "tanh"` computes
    `0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))`, GPT-2's `gelu_new`.
    The names follow `torch.nn.functional.gelu`.

    Example:
    ```mlir
    %y = tg.gelu %x {approximate = "tanh"} : tensor<2x8x256xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let hasVerifier = 1;
}

def TG_SiluOp : TG_UnaryElementwiseOp<"silu", [TG_Differentiable]> {
  let summary = "Sigmoid linear unit, x·σ(x)";
  let description = [{
    The activation of SwiGLU MLPs.

    Example:
    ```mlir
    %y = tg.silu %gate : tensor<2x8x172xf32>
    ```
  }];
}

def TG_SigmoidOp : TG_UnaryElementwiseOp<"sigmoid", [TG_Differentiable]> {
  let summary = "Logistic sigmoid, 1 / (1 + exp(-x))";
  let description = [{
    The gate of Qwen2-MoE's shared expert.

    Example:
    ```mlir
    %g = tg.sigmoid %x : tensor<26x1xf32>
    ```
  }];
}

def TG_SoftmaxOp : TG_Op<"softmax", [SameOperandsAndResultType, TG_Differentiable]> {
  let summary = "Softmax along one axis";
  let description = [{
    `exp(x - max) / sum(exp(x - max))` along `axis`; a negative axis counts
    from the end as in PyTorch.

    Example:
    ```mlir
    %p = tg.softmax %s axis -1 : tensor<4x8x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, I64Prop:$axis);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input `axis` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Transformer
//===----------------------------------------------------------------------===//

def TG_EmbeddingOp : TG_InferredOp<"embedding", [TG_Differentiable]> {
  let summary = "Looks up rows of a table by integer ids";
  let description = [{
    `table` is `[V, D]`, `indices` any shape of i32/i64 ids; the result is
    `indices.shape + [D]`. Ids out of `[0, V)` are clamped at run time.

    Example:
    ```mlir
    %h = tg.embedding %wte, %ids : tensor<256x64xf32>, tensor<2x8xi32> -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$table, TG_IndexTensor:$indices);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` type($table) `,` type($indices) `->`
    type($result)
  }];
}

def TG_RMSNormOp : TG_InferredOp<"rms_norm", [TG_Differentiable]> {
  let summary = "Root-mean-square normalisation over the last dimension";
  let description = [{
    `x / sqrt(mean(x², -1) + eps) * weight`, as Llama's `LlamaRMSNorm`
    (computed in the input's element type). `weight` is `[D]`.

    Example:
    ```mlir
    %n = tg.rms_norm %h, %w {eps = 1.0e-05 : f64} : tensor<2x8x64xf32>, tensor<64xf32> -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->`
    type($result)
  }];
}

def TG_LayerNormOp : TG_InferredOp<"layer_norm", [TG_Differentiable]> {
  let summary = "Layer normalisation over the last dimension";
  let description = [{
    `(x - mean) / sqrt(var + eps) * weight + bias` over the last dimension
    (biased variance, as `torch.nn.LayerNorm`). `weight` and the optional
    `bias` are `[D]`.

    Example:
    ```mlir
    %n = tg.layer_norm %h, %g, %b {eps = 1.0e-05 : f64} : tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<2x8x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       Optional<TG_FloatTensor>:$bias,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,`
    type($weight) (`,` type($bias)^)? `->` type($result)
  }];
}

def TG_RopeOp : TG_Op<"rope", [AllTypesMatch<["input", "result"]>, TG_Differentiable]> {
  let summary = "Rotary position embedding (Hugging Face Llama convention)";
  let description = [{
    `input` is `[B, S, H, D]` with even `D`. Position `s` (0-based) and pair
    index `i < D/2` use angle `s · theta^(-2i/D)`; the result is
    `x·cos + rotate_half(x)·sin`, where `rotate_half` swaps the two halves of
    the head dimension and negates the new first half — exactly
    `apply_rotary_pos_emb` of `transformers`' Llama. With `inverse` the
    rotation runs backwards (angle `-s · theta^(-2i/D)`): RoPE is orthogonal,
    so this is its gradient.

    With `rotary_dims` R (even, at most D) only the first R dimensions of
    each head rotate, as pairs (i, i + R/2) at angle `s · theta^(-2i/R)`; the
    other D − R pass through unchanged (GPT-NeoX's `rotary_pct`, Phi's
    `partial_rotary_factor`). R defaults to D.

    `frequencies`, when present, gives each pair's inverse frequency in place
    of `theta^(-2i/R)` (`R/2` positive values): the scaled RoPE variants
    (Llama 3's frequency-dependent scaling, linear position interpolation)
    differ from the plain one only in this table, which the front end
    computes as `transformers` does and every backend tabulates alike.

    With `positions` (`[B, S]` i32, generation's `position_ids`) token
    `(b, s)` sits at position `positions[b, s]` instead of `s`;
    `max_position` bounds them (the tables hold that many positions) and
    a position outside `[0, max_position)` is clamped at run time.

    Example:
    ```mlir
    %q = tg.rope %q0 {theta = 1.000000e+04 : f64} : tensor<2x8x4x16xf32>
    %k = tg.rope %k0 {frequencies = array<f64: 1.0, 0.1>} : tensor<2x8x2x4xf32>
    %p = tg.rope %p0 {rotary_dims = 4 : i64} : tensor<2x8x2x16xf32>
    %d = tg.rope %d0 at %pos {max_position = 2048 : i64} : tensor<1x1x4x16xf32>, tensor<1x1xi32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "10000.0">:$theta,
                       OptionalAttr<DenseF64ArrayAttr>:$frequencies,
                       UnitAttr:$inverse,
                       OptionalAttr<I64Attr>:$rotary_dims,
                       Optional<StaticShapeTensorOf<[I32]>>:$positions,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$max_position);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`at` $positions^)? attr-dict `:` type($result)
    (`,` type($positions)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of leading dimensions of each head that rotate (R).
    int64_t getRotatedDims();
    /// The inverse frequency of each of the R/2 pairs: `frequencies`, or
    /// theta^(-2i/R).
    ::llvm::SmallVector<double> getInverseFrequencies();
  }];
}

def TG_AttentionOp : TG_InferredOp<"attention", [TG_DifferentiableKeepingFullPrecision]> {
  let summary = "Scaled dot-product attention, multi-head or grouped-query";
  let description = [{
    Inputs are already projected, in `[B, S, H, D]` layout: `query` is
    `[B, S, Hq, D]`, `key` `[B, Skv, Hkv, D]`, `value` `[B, Skv, Hkv, Dv]`.
    `Hkv` must divide `Hq`; query head `h` attends with key/value head
    `h / (Hq / Hkv)` (grouped-query attention; `Hkv == Hq` is multi-head).
    The result is `softmax(scale · Q Kᵀ + mask) V` as `[B, S, Hq, Dv]`; with
    `causal`, position `i` sees keys `0..i` (then `S == Skv`); a `window`
    `W` (only with `causal`) narrows that to the last `W` keys,
    `i - W < j <= i` (Mistral's sliding window). `scale` defaults to
    `1/sqrt(D)`. With `softcap` c each score is soft-capped before the mask
    and the softmax, `s ↦ c · tanh(s / c)` (Gemma 2's
    `attn_logit_softcapping`); the scores below are then the capped ones.

    With `positions` (`[B, S]` i32) the queries are tokens at those
    positions and the keys a cache indexed by position (generation with a
    KV cache, `S <= Skv`): with `causal`, query `(b, s)` sees keys
    `j <= positions[b, s]` (within its `window`). Entries past a query's
    position are masked, whatever they hold.

    The second result, `logsumexp` (`[B, S, Hq]`), is each query row's
    `log Σ_j exp(scale · q·k_j + mask_j)`: the one statistic the gradient
    needs to recompute the probabilities tile by tile
    (`P = exp(scale · Q Kᵀ + mask − logsumexp)`), as FlashAttention keeps it.
    Its own gradient is not defined (nothing but `tg.attention_grad` may
    need it).

    Example:
    ```mlir
    %o, %lse = tg.attention %q, %k, %v {causal} : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32> -> tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$query, TG_FloatTensor:$key,
                       TG_FloatTensor:$value, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$window,
                       OptionalAttr<F64Attr>:$softcap,
                       Optional<StaticShapeTensorOf<[I32]>>:$positions);
  let results = (outs TG_FloatTensor:$result, TG_FloatTensor:$logsumexp);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`at` $positions^)? attr-dict `:` type($query)
    `,` type($key) `,` type($value) (`,` type($positions)^)? `->`
    type($result) `,` type($logsumexp)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scale applied to Q·Kᵀ: the attribute, or 1/sqrt(D).
    double getScaleOrDefault();
  }];
}

def TG_CacheUpdateOp : TG_Op<"cache_update", [AllTypesMatch<["cache", "result"]>]> {
  let summary = "Writes a step's keys or values into a KV cache by position";
  let description = [{
    `cache` is `[B, L, H, D]`, `rows` `[B, S, H, D]` and `positions`
    `[B, S]` i32: the result is `cache` with row `(b, positions[b, s])`
    replaced by `rows[b, s]`. Positions outside `[0, L)` are clamped at run
    time. Generation writes each step's keys and values with it before the
    step's attention reads the cache; bufferized with the cache as an
    argument, it writes the argument in place.

    Example:
    ```mlir
    %k1 = tg.cache_update %kcache, %k at %pos : tensor<1x64x2x16xf32>, tensor<1x1x2x16xf32>, tensor<1x1xi32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$cache, TG_FloatTensor:$rows,
                       StaticShapeTensorOf<[I32]>:$positions);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $cache `,` $rows `at` $positions attr-dict `:` type($cache) `,`
    type($rows) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def TG_CrossEntropyOp : TG_InferredOp<"cross_entropy", [TG_Differentiable]> {
  let summary = "Mean softmax cross-entropy of logits against integer targets";
  let description = [{
    `logits` is `[N..., V]`, `targets` is `[N...]` (i32/i64 class ids). The
    result is a 0-d tensor: the mean over all positions whose target is not
    `ignore_index` of `logsumexp(logits) - logits[target]`, as
    `torch.nn.functional.cross_entropy(reduction="mean")`. With `softcap` c
    the logits are first capped, `x ↦ c · tanh(x / c)` (Gemma 2's
    `final_logit_softcapping`).

    Example:
    ```mlir
    %loss = tg.cross_entropy %logits, %targets {ignore_index = -100 : i64} : tensor<2x8x256xf32>, tensor<2x8xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$logits, TG_IndexTensor:$targets,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs TG_ScalarFloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets attr-dict `:` type($logits) `,` type($targets) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def TG_LinearCrossEntropyOp : TG_InferredOp<"linear_cross_entropy",
    [TG_MatrixProduct, TG_DifferentiableKeepingFullPrecision]> {
  let summary = "Vocabulary projection, mean cross-entropy and its gradients, fused over row chunks";
  let description = [{
    `cross_entropy(linear(input, weight, bias), targets)` without ever
    storing the logits: `input` is `[N..., D]`, `weight` `[V, D]`, the
    optional `bias` `[V]`, `targets` `[N...]`. The rows are processed
    `chunk_rows` at a time; for each chunk the `[chunk_rows, V]` logits are
    computed, reduced into the loss and, in the same sweep, turned into the
    gradients of the mean loss (for an upstream gradient of 1):
    `dlogits = (softmax − onehot(targets)) / count`, zero on rows whose
    target is `ignore_index`; `input_grad` rows `= dlogits · weight`,
    `weight_grad += dlogitsᵀ · input`, `bias_grad += Σ_rows dlogits`. Only
    one chunk of logits exists at a time (Liger Kernel's fused linear
    cross-entropy), and nothing is recomputed: the gradient rule scales
    these results by the loss's upstream gradient, which a train step's seed
    of 1 folds away. `result` is the same 0-d mean loss as
    `tg.cross_entropy`. With `softcap` c the logits are capped as there, and
    `dlogits` is further multiplied by the cap's slope `1 − (z / c)²` at the
    capped logit z. `tg-fuse` creates it from the unfused pair.

    Example:
    ```mlir
    %loss, %dh, %dw = tg.linear_cross_entropy %h, %w, %targets {chunk_rows = 256 : i64, ignore_index = -100 : i64}
        : tensor<2x8x64xf32>, tensor<50257x64xf32>, tensor<2x8xi32>
        -> tensor<f32>, tensor<2x8x64xf32>, tensor<50257x64xf32>
    %l2, %dx, %dw2, %db2 = tg.linear_cross_entropy %x, %w2, %labels bias(%b2 : tensor<10xf32>) {chunk_rows = 4 : i64}
        : tensor<4x32xf32>, tensor<10x32xf32>, tensor<4xi32>
        -> tensor<f32>, tensor<4x32xf32>, tensor<10x32xf32>, tensor<10xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, TG_FloatTensor:$weight,
                       Optional<TG_FloatTensor>:$bias, TG_IndexTensor:$targets,
                       OptionalAttr<I64Attr>:$ignore_index,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_rows,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs TG_ScalarFloatTensor:$result, TG_FloatTensor:$input_grad,
                      TG_FloatTensor:$weight_grad,
                      Optional<TG_FloatTensor>:$bias_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $targets (`bias` `(` $bias^ `:` type($bias) `)`)?
    attr-dict `:` type($input) `,` type($weight) `,` type($targets) `->`
    type($result) `,` type($input_grad) `,` type($weight_grad)
    (`,` type($bias_grad)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts: dropless top-k routing (docs/moe.md)
//===----------------------------------------------------------------------===//

def TG_RouteOp : TG_Op<"route", [TG_Differentiable]> {
  let summary = "Top-k routing weights and experts from router logits";
  let description = [{
    `logits` is `[..., E]`. As Hugging Face's MoE blocks route: the
    probabilities `softmax(logits)` are computed in f32 whatever the logits'
    type, the `top_k` largest are chosen per row (ties: the lower expert
    first, so a row's choice is deterministic), and with `normalize` the
    chosen probabilities are divided by their sum (`norm_topk_prob`).
    `weights` is `[..., top_k]` f32 (f64 for f64 logits) and `experts`
    `[..., top_k]` i32, both in decreasing order of probability.

    Example:
    ```mlir
    %w, %e = tg.route %logits {top_k = 2 : i64, normalize} : tensor<26x5xf32> -> tensor<26x2xf32>, tensor<26x2xi32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$logits,
                       ConfinedAttr<I64Attr, [IntPositive]>:$top_k,
                       UnitAttr:$normalize);
  let results = (outs StaticShapeTensorOf<[F32, F64]>:$weights,
                      StaticShapeTensorOf<[I32]>:$experts);
  let assemblyFormat = [{
    $logits attr-dict `:` type($logits) `->` type($weights) `,` type($experts)
  }];
  let hasVerifier = 1;
}

def TG_RouteGradOp : TG_Op<"route_grad"> {
  let summary = "Gradient of tg.route's weights into its logits";
  let description = [{
    `grad` is the gradient of `tg.route`'s weights, `logits` and `experts`
    its operand and chosen experts. With `p = softmax(logits)` (in the
    weights' type) and the
    weights `w_j = p[e_j]` (divided by `S = Σ_j p[e_j]` with `normalize`):
    `dp[e_j] = g_j` (`(g_j − Σ_i g_i·w_i) / S` with `normalize`), zero for
    experts not chosen, and `result = p ⊙ (dp − Σ dp ⊙ p)` in the logits'
    type.

    Example:
    ```mlir
    %dl = tg.route_grad %dw, %logits, %e {normalize} : tensor<26x2xf32>, tensor<26x5xf32>, tensor<26x2xi32> -> tensor<26x5xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32, F64]>:$grad,
                       TG_FloatTensor:$logits,
                       StaticShapeTensorOf<[I32]>:$experts,
                       UnitAttr:$normalize);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $experts attr-dict `:` type($grad) `,`
    type($logits) `,` type($experts) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_ExpertDispatchOp : TG_Op<"expert_dispatch"> {
  let summary = "Groups the (token, slot) pairs of a routing by expert";
  let description = [{
    `experts` is `[T, k]` (tg.route's choice, ids in `[0, num_experts)`).
    Its `N = T·k` pairs are ordered by expert with a stable counting sort
    (by token, then slot, within an expert): pair `(t, j)` goes to row
    `positions[t, j]` of the grouped order, `rows[r]` is the token of
    grouped row `r`, and expert `e` owns the rows `[offsets[e],
    offsets[e + 1])` (`offsets` has `num_experts + 1` entries, the first 0,
    the last N). Every pair has a row: no token is dropped and no row is
    padding. Ids outside `[0, num_experts)` are clamped.

    Example:
    ```mlir
    %rows, %pos, %off = tg.expert_dispatch %e {num_experts = 5 : i64} : tensor<26x2xi32> -> tensor<52xi32>, tensor<26x2xi32>, tensor<6xi32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[I32]>:$experts,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_experts);
  let results = (outs StaticShapeTensorOf<[I32]>:$rows,
                      StaticShapeTensorOf<[I32]>:$positions,
                      StaticShapeTensorOf<[I32]>:$offsets);
  let assemblyFormat = [{
    $experts attr-dict `:` type($experts) `->` type($rows) `,`
    type($positions) `,` type($offsets)
  }];
  let hasVerifier = 1;
}

def TG_ExpertCountsOp : TG_Op<"expert_counts"> {
  let summary = "How many (token, slot) pairs chose each expert";
  let description = [{
    `experts` is `[..., k]` (tg.route's choice); the result `[num_experts]`
    holds each expert's count as a float: the routing statistic of Hugging
    Face's load-balancing loss, which carries no gradient. Ids outside
    `[0, num_experts)` are clamped.

    Example:
    ```mlir
    %c = tg.expert_counts %e {num_experts = 5 : i64} : tensor<26x2xi32> -> tensor<5xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[I32]>:$experts,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_experts);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $experts attr-dict `:` type($experts) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_GroupedMatmulOp : TG_Op<"grouped_matmul",
    [TG_MatrixProduct, TG_Differentiable]> {
  let summary = "Row segments times their own expert's matrix";
  let description = [{
    `input` is `[N, K]`, `offsets` `[E + 1]` i32 (tg.expert_dispatch's), and
    `weights` E matrices, each `[K, M]` (`[M, K]` with `transpose_weights`,
    the Hugging Face `[out, in]` layout). Rows `[offsets[e], offsets[e+1])`
    of the result are those rows of `input` times weight `e`; rows outside
    every segment are zero. The result is `[N, M]`, of the operands'
    element type or f32 for bf16/f16 operands (accumulated in f32, as
    `tg.matmul`). How many rows each expert owns is known only at run time.

    Example:
    ```mlir
    %g = tg.grouped_matmul %xs, %off, %w0, %w1 {transpose_weights} : tensor<52x24xf32>, tensor<3xi32>, tensor<40x24xf32>, tensor<40x24xf32> -> tensor<52x40xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       StaticShapeTensorOf<[I32]>:$offsets,
                       Variadic<TG_FloatTensor>:$weights,
                       UnitAttr:$transpose_weights);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $offsets `,` $weights attr-dict `:` type($input) `,`
    type($offsets) `,` type($weights) `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_GroupedWeightGradOp : TG_Op<"grouped_weight_grad", [TG_MatrixProduct]> {
  let summary = "Per-expert products lhsᵀ·rhs over each expert's rows";
  let description = [{
    `lhs` is `[N, P]`, `rhs` `[N, Q]`, `offsets` `[E + 1]` i32: result `e`
    is `lhs[rows_e]ᵀ · rhs[rows_e]`, `[P, Q]`, over the rows
    `[offsets[e], offsets[e+1])` (zero for an expert without rows). The
    weight gradients of `tg.grouped_matmul`; results are f32 for bf16/f16
    operands.

    Example:
    ```mlir
    %d0, %d1 = tg.grouped_weight_grad %dy, %xs, %off : tensor<52x40xf32>, tensor<52x24xf32>, tensor<3xi32> -> tensor<40x24xf32>, tensor<40x24xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       StaticShapeTensorOf<[I32]>:$offsets);
  let results = (outs Variadic<TG_FloatTensor>:$results);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $offsets attr-dict `:` type($lhs) `,` type($rhs) `,`
    type($offsets) `->` type($results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reverse graph: gradient ops that tg-autodiff emits
//===----------------------------------------------------------------------===//

def TG_PadOp : TG_Op<"pad", [TG_Differentiable]> {
  let summary = "Pads a tensor with zeros along one dimension";
  let description = [{
    `low` zeros before and `high` zeros after the operand along `axis`; the
    gradient of `tg.slice`.

    Example:
    ```mlir
    %g = tg.pad %dk axis 2 low 64 high 64 : tensor<2x8x64xf32> -> tensor<2x8x192xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input, I64Prop:$axis, I64Prop:$low,
                       I64Prop:$high);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis `low` $low `high` $high attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def TG_EmbeddingGradOp : TG_Op<"embedding_grad"> {
  let summary = "Scatter-adds row gradients into a table gradient";
  let description = [{
    `result[indices[p], :] += grad[p, :]` for every position `p`, starting
    from zeros; the result is the `[V, D]` gradient of the table (the number
    of rows comes from the result type). Ids out of `[0, V)` are clamped as
    in the forward lookup.

    Example:
    ```mlir
    %dwte = tg.embedding_grad %dh, %ids : tensor<2x8x64xf32>, tensor<2x8xi32> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_IndexTensor:$indices);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

// Gradients of elementwise activations: `result = grad * f'(...)`.
class TG_ActivationGradOp<string mnemonic, string readsName>
    : TG_Op<mnemonic, [Elementwise, SameOperandsAndResultType]> {
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$saved);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $saved attr-dict `:` type($result)";
}

def TG_ReluGradOp : TG_ActivationGradOp<"relu_grad", "output"> {
  let summary = "Gradient of relu from its output";
  let description = [{
    `result = grad * (saved > 0)` where `saved` is relu's output, so the
    backward pass keeps only the output.

    Example:
    ```mlir
    %dx = tg.relu_grad %dy, %y : tensor<4x512xf32>
    ```
  }];
}

def TG_GeluGradOp : TG_ActivationGradOp<"gelu_grad", "input"> {
  let summary = "Gradient of gelu from its input";
  let description = [{
    `result = grad * gelu'(saved)` for the erf (`approximate = "none"`) or the
    tanh form; `saved` is gelu's input.

    Example:
    ```mlir
    %dx = tg.gelu_grad %dy, %x {approximate = "tanh"} : tensor<2x8x256xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$saved,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let hasVerifier = 1;
}

def TG_SigmoidGradOp : TG_ActivationGradOp<"sigmoid_grad", "output"> {
  let summary = "Gradient of sigmoid from its output";
  let description = [{
    `result = grad * s (1 - s)` with `s = saved`, sigmoid's output.

    Example:
    ```mlir
    %dx = tg.sigmoid_grad %dy, %s : tensor<26x1xf32>
    ```
  }];
}

def TG_SiluGradOp : TG_ActivationGradOp<"silu_grad", "input"> {
  let summary = "Gradient of silu from its input";
  let description = [{
    `result = grad * σ(x) (1 + x (1 - σ(x)))` with `x = saved`, silu's input.

    Example:
    ```mlir
    %dg = tg.silu_grad %ds, %g : tensor<2x8x172xf32>
    ```
  }];
}

def TG_SoftmaxGradOp : TG_Op<"softmax_grad", [SameOperandsAndResultType]> {
  let summary = "Gradient of softmax from its output";
  let description = [{
    `result = y * (grad - sum(grad * y, axis))` with `y` softmax's output.

    Example:
    ```mlir
    %ds = tg.softmax_grad %dp, %p axis -1 : tensor<4x8x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$output,
                       I64Prop:$axis);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $output `axis` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_RMSNormGradOp : TG_Op<"rms_norm_grad", [
    AllTypesMatch<["input", "input_grad", "grad"]>,
    AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "Gradients of rms_norm with respect to its input and weight";
  let description = [{
    From the output gradient, the forward input and the weight (the inverse
    RMS is recomputed, not stored):
    `r = rsqrt(mean(x²) + eps)`, `n = x·r`,
    `input_grad = r · (grad·w − n · mean(grad·w·n))`,
    `weight_grad = sum over rows of grad·n`.

    Example:
    ```mlir
    %dx, %dw = tg.rms_norm_grad %dy, %x, %w {eps = 1.0e-05 : f64} : tensor<2x8x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def TG_LayerNormGradOp : TG_Op<"layer_norm_grad", [
    AllTypesMatch<["input", "input_grad", "grad"]>,
    AllTypesMatch<["weight", "weight_grad", "bias_grad"]>]> {
  let summary = "Gradients of layer_norm with respect to input, weight and bias";
  let description = [{
    From the output gradient, the forward input and the weight (mean and
    inverse standard deviation are recomputed):
    `n = (x − mean)·r`, `g = grad·w`,
    `input_grad = r · (g − mean(g) − n · mean(g·n))`,
    `weight_grad = sum over rows of grad·n`, `bias_grad = sum over rows of grad`.

    Example:
    ```mlir
    %dx, %dw, %db = tg.layer_norm_grad %dy, %x, %w : tensor<2x8x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$input,
                       TG_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs TG_FloatTensor:$input_grad, TG_FloatTensor:$weight_grad,
                      TG_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def TG_AttentionGradOp : TG_Op<"attention_grad", [
    AllTypesMatch<["query", "query_grad", "grad", "output"]>,
    AllTypesMatch<["key", "key_grad"]>,
    AllTypesMatch<["value", "value_grad"]>]> {
  let summary = "Gradients of attention with respect to query, key and value";
  let description = [{
    From the output gradient, the forward inputs, output and per-row
    `logsumexp`, recomputing the probabilities
    `P = exp(scale·QKᵀ + mask − logsumexp)` (never stored):
    `dV = Pᵀ dO`, `dP = dO Vᵀ`, `dS = P ∘ (dP − rowsum(dO ∘ O))`,
    `dQ = scale · dS K`, `dK = scale · dSᵀ Q`. With grouped-query attention
    the gradients of a shared key/value head are summed over its query group.
    `causal`, `window`, `scale` and `softcap` are those of the forward op;
    with `softcap` c, `dS` is further multiplied by `1 − (s / c)²` (the
    derivative of the cap at the capped score s). The value head size
    equals the query/key head size.

    Example:
    ```mlir
    %dq, %dk, %dv = tg.attention_grad %do, %q, %k, %v, %o, %lse {causal} : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$grad, TG_FloatTensor:$query,
                       TG_FloatTensor:$key, TG_FloatTensor:$value,
                       TG_FloatTensor:$output, TG_FloatTensor:$logsumexp,
                       UnitAttr:$causal, OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs TG_FloatTensor:$query_grad, TG_FloatTensor:$key_grad,
                      TG_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value `,` $output `,` $logsumexp attr-dict
    `:` type($query) `,` type($key) `,` type($value) `,` type($logsumexp)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scale applied to Q·Kᵀ: the attribute, or 1/sqrt(D).
    double getScaleOrDefault();
  }];
}

def TG_CrossEntropyGradOp : TG_Op<"cross_entropy_grad", [
    AllTypesMatch<["logits", "result"]>]> {
  let summary = "Gradient of mean cross-entropy with respect to the logits";
  let description = [{
    `result = grad · (softmax(logits) − onehot(targets)) / count`, where
    `count` is the number of positions whose target is not `ignore_index`;
    ignored positions get zero. The probabilities are recomputed from the
    logits. `grad` is the 0-d gradient of the loss. With `softcap` c (that
    of the forward op) the probabilities are those of the capped logits z
    and the result is further multiplied by `1 − (z / c)²`.

    Example:
    ```mlir
    %dl = tg.cross_entropy_grad %one, %logits, %targets : tensor<f32>, tensor<2x8x256xf32>, tensor<2x8xi32>
    ```
  }];
  let arguments = (ins TG_ScalarFloatTensor:$grad, TG_FloatTensor:$logits,
                       TG_IndexTensor:$targets,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $targets attr-dict `:` type($grad) `,` type($logits)
    `,` type($targets)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer: ops that tg-optimizer appends to train_step
//===----------------------------------------------------------------------===//

def TG_SumSquaresOp : TG_Op<"sum_squares", [TG_OptimizerStep]> {
  let summary = "Sum of the squares of a tensor's elements, in f64";
  let description = [{
    `Σ_i x_i²`, accumulated and returned in f64: one gradient's share of the
    global norm. tg-optimizer emits one per gradient so that each can run
    as soon as its gradient is complete (tg-schedule-updates) instead of
    keeping every gradient alive for one norm at the end of the step.

    Example:
    ```mlir
    %s = tg.sum_squares %g : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input);
  let results = (outs TG_F64Scalar:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def TG_GlobalNormOp : TG_Op<"global_norm", [TG_OptimizerStep]> {
  let summary = "L2 norm from per-tensor sums of squares";
  let description = [{
    `sqrt(Σ_k s_k)` over f64 sums of squares (`tg.sum_squares`, one per
    tensor), rounded to f32: the global gradient norm used for clipping and
    logged by the runtime. The sums stay in f64 because a chain of f32
    additions over millions of elements loses a fraction of a percent, and
    with it the clipping factor.

    Example:
    ```mlir
    %n = tg.global_norm %s0, %s1 : tensor<f64>, tensor<f64>
    ```
  }];
  let arguments = (ins Variadic<TG_F64Scalar>:$sums);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = "$sums attr-dict `:` type($sums)";
}

def TG_ClipFactorOp : TG_Op<"clip_factor", [TG_OptimizerStep, SameOperandsAndResultType]> {
  let summary = "Scale factor of global-norm gradient clipping";
  let description = [{
    `min(1, max_norm / (norm + 1e-6))`, as `torch.nn.utils.clip_grad_norm_`:
    multiplying every gradient by it clips their global norm to `max_norm`.

    Example:
    ```mlir
    %c = tg.clip_factor %n {max_norm = 1.0 : f64} : tensor<f32>
    ```
  }];
  let arguments = (ins TG_F32Scalar:$norm, F64Attr:$max_norm);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = "$norm attr-dict `:` type($result)";
}

def TG_NotFiniteOp : TG_Op<"not_finite", [TG_OptimizerStep, SameOperandsAndResultType]> {
  let summary = "1 when a scalar is inf or NaN, else 0: the update guard";
  let description = [{
    The skip flag of an update guard without loss scaling (tg-optimizer
    `guard-updates`): 1 when the global gradient norm is not finite, so
    that every update keeps its old values (their `skip` operand) and the
    runtime can stop with the weights of the step before. The norm is the
    same on every process of a data-parallel job, so they all skip or none
    does; a non-finite loss makes non-finite gradients.

    Example:
    ```mlir
    %skip = tg.not_finite %norm : tensor<f32>
    ```
  }];
  let arguments = (ins TG_F32Scalar:$input);
  let results = (outs TG_F32Scalar:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def TG_LossScaleUpdateOp : TG_Op<"loss_scale_update", [TG_OptimizerStep,
    TG_ParameterUpdate, AllTypesMatch<["scale", "growth_tracker",
    "scaled_norm", "inverse_scale", "skip", "new_scale",
    "new_growth_tracker"]>]> {
  let summary = "Dynamic loss scaling: overflow check and the next scale";
  let description = [{
    The gradients of a step whose loss was multiplied by `scale` are
    `scale` times too large; `scaled_norm` is their global norm. Results:
    `inverse_scale = 1 / scale` (what unscales them), `skip` = 1 when
    `scaled_norm` is not finite (an overflow: the updates keep the old
    values), else 0, and the next scale and growth tracker, as
    `torch.cuda.amp.GradScaler`: on overflow the scale halves and the
    tracker restarts; otherwise the tracker counts clean steps and after
    `growth_interval` of them the scale doubles. `growth_interval = 0` keeps
    the scale fixed (static loss scaling; overflowed steps are still
    skipped).

    Example:
    ```mlir
    %inv, %skip, %s1, %t1 = tg.loss_scale_update %s, %t, %n {growth_interval = 2000 : i64} : tensor<f32>
    ```
  }];
  let arguments = (ins TG_F32Scalar:$scale, TG_F32Scalar:$growth_tracker,
                       TG_F32Scalar:$scaled_norm,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$growth_interval);
  let results = (outs TG_F32Scalar:$inverse_scale, TG_F32Scalar:$skip,
                      TG_F32Scalar:$new_scale,
                      TG_F32Scalar:$new_growth_tracker);
  let assemblyFormat = [{
    $scale `,` $growth_tracker `,` $scaled_norm attr-dict `:` type($scale)
  }];
}

def TG_SGDUpdateOp : TG_Op<"sgd_update", [TG_OptimizerStep, TG_ParameterUpdate,
    AllTypesMatch<["param", "grad", "new_param"]>]> {
  let summary = "One SGD step of one parameter";
  let description = [{
    `param' = param − lr · (grad + weight_decay · param)`, as
    `torch.optim.SGD` without momentum. `lr` is a 0-d f32 tensor so the
    runtime can change it between steps. With `skip` (a 0-d f32, nonzero
    when the gradients overflowed: `tg.loss_scale_update`) `param' = param`.

    Example:
    ```mlir
    %p1 = tg.sgd_update %p, %g, %lr : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       TG_F32Scalar:$lr, Optional<TG_F32Scalar>:$skip,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs TG_FloatTensor:$new_param);
  let assemblyFormat = [{
    $param `,` $grad `,` $lr (`skip` $skip^)? attr-dict `:` type($param)
  }];
}

def TG_SGDMomentumUpdateOp : TG_Op<"sgd_momentum_update", [TG_OptimizerStep, TG_ParameterUpdate,
    AllTypesMatch<["param", "grad", "new_param"]>,
    AllTypesMatch<["momentum_buffer", "new_momentum_buffer"]>]> {
  let summary = "One SGD step of one parameter with momentum";
  let description = [{
    `d = grad + weight_decay · param`, `buf' = momentum · buf + d` (`buf' = d`
    on the first step, `step == 1`), `param' = param − lr · buf'`, as
    `torch.optim.SGD` (no dampening, no Nesterov). With a nonzero `skip`
    both stay as they were.

    Example:
    ```mlir
    %p1, %b1 = tg.sgd_momentum_update %p, %g, %buf, %lr, %t {momentum = 0.9 : f64} : tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       TG_FloatTensor:$momentum_buffer, TG_F32Scalar:$lr,
                       TG_F32Scalar:$step, Optional<TG_F32Scalar>:$skip,
                       F64Attr:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs TG_FloatTensor:$new_param,
                      TG_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `,` $lr `,` $step (`skip` $skip^)?
    attr-dict `:` type($param) `,` type($momentum_buffer)
  }];
}

def TG_AdamWUpdateOp : TG_Op<"adamw_update", [TG_OptimizerStep, TG_ParameterUpdate,
    AllTypesMatch<["param", "grad", "new_param"]>,
    AllTypesMatch<["exp_avg", "exp_avg_sq", "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "One AdamW step of one parameter";
  let description = [{
    As `torch.optim.AdamW`: with `t = step` (1-based, a 0-d f32 tensor),
    `param ← param · (1 − lr·weight_decay)`,
    `m' = β1·m + (1−β1)·g`, `v' = β2·v + (1−β2)·g²`,
    `param' = param − lr · (m'/(1−β1ᵗ)) / (sqrt(v'/(1−β2ᵗ)) + eps)`.
    Moments are f32. With a nonzero `skip` (the gradients overflowed) the
    parameter and both moments stay as they were.

    Example:
    ```mlir
    %p1, %m1, %v1 = tg.adamw_update %p, %g, %m, %v, %lr, %t {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64} : tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$param, TG_FloatTensor:$grad,
                       TG_FloatTensor:$exp_avg, TG_FloatTensor:$exp_avg_sq,
                       TG_F32Scalar:$lr, TG_F32Scalar:$step,
                       Optional<TG_F32Scalar>:$skip,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay);
  let results = (outs TG_FloatTensor:$new_param, TG_FloatTensor:$new_exp_avg,
                      TG_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step
    (`skip` $skip^)? attr-dict `:` type($param) `,` type($exp_avg)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Communication: ops that tg-data-parallel inserts into train_step
//===----------------------------------------------------------------------===//

// Collectives change memory other processes see: not Pure, never folded,
// merged or dropped. They bufferize in place (TGBufferization.cpp) into calls
// of the runtime's collectives.
class TG_CommOp<string mnemonic, list<Trait> traits = []>
    : Op<TG_Dialect, mnemonic,
         !listconcat([TG_ElementCountFits,
                      MemoryEffects<[MemRead, MemWrite]>,
                      DeclareOpInterfaceMethods<TG_CostOpInterface>], traits)>;

def TG_AllReduceStartOp : TG_CommOp<"all_reduce_start", [InferTypeOpAdaptor]> {
  let summary = "Starts a weighted sum of tensors over all processes";
  let description = [{
    Starts `Σ_ranks weight_rank · input_rank` for every input (one
    non-blocking all-reduce, `MPI_Iallreduce`, of the bucket they form) in
    the inputs' own buffers and returns at once; the sums are complete, and
    `results` may be read, only after `tg.collective_wait` on `request`.
    Nothing may read or write the buffers in between. `weight` is the
    process's share of the global mean (its count of loss tokens over the
    global count); in a single process each result is `weight · input`.

    Example:
    ```mlir
    %w1, %b1, %request = tg.all_reduce_start(%w, %b) weight %weight : tensor<64x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$inputs, TG_F32Scalar:$weight);
  let results = (outs Variadic<TG_FloatTensor>:$results, I64:$request);
  let assemblyFormat = "`(` $inputs `)` `weight` $weight attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def TG_ReduceScatterStartOp : TG_CommOp<"reduce_scatter_start",
    [InferTypeOpAdaptor, SameVariadicResultSize]> {
  let summary = "Starts a weighted sum over all processes, each keeping a shard";
  let description = [{
    ZeRO-1's gradient collective: starts `Σ_ranks weight_rank · input_rank`
    for every input (one non-blocking reduce-scatter of the bucket they
    form), of which this process receives only its shard: the elements
    `rank·S … rank·S + S − 1` of the flattened sum, `S = ⌈numel /
    processes⌉`, zero padded past the end (`shards`, 1-d tensors of `S`
    elements). `results` are the inputs (scaled by `weight` in place and read
    by the collective until it completes); nothing may use `results` or
    `shards` before `tg.collective_wait` on `request`, which takes them all.

    Example:
    ```mlir
    %g1, %s, %request = tg.reduce_scatter_start(%g) weight %weight over 2 : tensor<5x3xf32>
    // %s : tensor<8xf32>, this process's 8 of the 15 sums
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$inputs, TG_F32Scalar:$weight,
                       ConfinedAttr<I64Attr, [IntPositive]>:$processes);
  let results = (outs Variadic<TG_FloatTensor>:$results,
                      Variadic<TG_FloatTensor>:$shards, I64:$request);
  let assemblyFormat = [{
    `(` $inputs `)` `weight` $weight `over` $processes attr-dict `:`
    type($inputs)
  }];
  let hasVerifier = 1;
}

def TG_AllGatherStartOp : TG_CommOp<"all_gather_start",
    [InferTypeOpAdaptor, SameVariadicOperandSize, SameVariadicResultSize,
     TG_ParameterUpdate]> {
  let summary = "Starts assembling whole tensors from every process's shard";
  let description = [{
    ZeRO-1's parameter collective: each process contributes its shard of
    every tensor (`shards`, as `tg.shard` cuts them: `S = ⌈numel /
    processes⌉` elements, the padding ignored) and `results` are the whole
    new tensors (one non-blocking all-gather of the bucket), replacing
    `outputs`, the parameters: this is their update, so every other reader
    of an output runs before it (the gather itself never reads them).
    `sent` are the shards (read by the collective until it completes);
    `tg.collective_wait` on `request` takes `sent` and `results`.

    Example:
    ```mlir
    %sent, %p1, %request = tg.all_gather_start(%s) into (%p) over 2 : tensor<8xf32> into tensor<5x3xf32>
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$shards,
                       Variadic<TG_FloatTensor>:$outputs,
                       ConfinedAttr<I64Attr, [IntPositive]>:$processes);
  let results = (outs Variadic<TG_FloatTensor>:$sent,
                      Variadic<TG_FloatTensor>:$results, I64:$request);
  let assemblyFormat = [{
    `(` $shards `)` `into` `(` $outputs `)` `over` $processes attr-dict `:`
    type($shards) `into` type($outputs)
  }];
  let hasVerifier = 1;
}

def TG_SumOverProcessesOp : TG_CommOp<"sum_over_processes", [InferTypeOpAdaptor]> {
  let summary = "Sums f64 scalars over all processes (blocking)";
  let description = [{
    Each result is the sum of its input over the processes (one blocking
    all-reduce of them all). ZeRO-1 uses it for the global gradient norm:
    each process's sums of squares cover only its shards of the gradients.

    Example:
    ```mlir
    %t0, %t1 = tg.sum_over_processes(%s0, %s1) : tensor<f64>, tensor<f64>
    ```
  }];
  let arguments = (ins Variadic<TG_F64Scalar>:$inputs);
  let results = (outs Variadic<TG_F64Scalar>:$results);
  let assemblyFormat = "`(` $inputs `)` attr-dict `:` type($inputs)";
}

def TG_ParameterGatherStartOp : TG_CommOp<"parameter_gather_start",
    [InferTypeOpAdaptor, SameVariadicResultSize]> {
  let summary = "Starts assembling whole parameters for their readers (ZeRO-3)";
  let description = [{
    ZeRO-3's parameter collective: each process holds only its shard of a
    parameter (`S = ⌈numel / processes⌉` elements, as `tg.shard` cuts it,
    the padding ignored); before the ops that read the whole parameter,
    one non-blocking all-gather of the bucket assembles every process's
    shard into `results`, new tensors of `whole_types` that die after
    their last reader. `sent` are the shards (read by the collective until
    it completes); `tg.collective_wait` on `request` takes `sent` and
    `results`. Unlike `tg.all_gather_start` this updates nothing: the
    shards stay the parameters.

    Example:
    ```mlir
    %sent, %w, %request = tg.parameter_gather_start(%s) over 2 : tensor<8xf32> into [tensor<5x3xf32>]
    ```
  }];
  let arguments = (ins Variadic<TG_FloatTensor>:$shards,
                       TypeArrayAttr:$whole_types,
                       ConfinedAttr<I64Attr, [IntPositive]>:$processes);
  let results = (outs Variadic<TG_FloatTensor>:$sent,
                      Variadic<TG_FloatTensor>:$results, I64:$request);
  let assemblyFormat = [{
    `(` $shards `)` `over` $processes attr-dict `:` type($shards) `into`
    $whole_types
  }];
  let hasVerifier = 1;
}

def TG_ShardOp : TG_Op<"shard", [InferTypeOpAdaptor]> {
  let summary = "This process's shard of a tensor (ZeRO-1)";
  let description = [{
    The elements `rank·S … rank·S + S − 1` of the flattened input, `S =
    ⌈numel / processes⌉`, zero past its end, as a 1-d tensor of `S`
    elements: the part of a parameter whose optimizer state this process
    keeps and whose update it computes. `rank` is the process's (the
    runtime's), so the op is a copy that only a process knows the offset of.

    Example:
    ```mlir
    %s = tg.shard %p over 2 : tensor<5x3xf32>   // tensor<8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$processes);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input `over` $processes attr-dict `:` type($input)";
  let extraClassDeclaration = [{
    /// The 1-d shard type of `full` over `processes`.
    static ::mlir::RankedTensorType getShardType(::mlir::RankedTensorType full,
                                                 int64_t processes);
  }];
}

def TG_CollectiveWaitOp : TG_CommOp<"collective_wait", [InferTypeOpAdaptor]> {
  let summary = "Completes a collective started by a tg.*_start op";
  let description = [{
    Waits for the collective `request` (`MPI_Wait`) of
    `tg.all_reduce_start`, `tg.reduce_scatter_start` or
    `tg.all_gather_start`; `inputs` are that start's tensors, all of them in
    order (what the collective reads or writes until now), and `results`
    are the same buffers, complete.

    Example:
    ```mlir
    %w2, %b2 = tg.collective_wait %request(%w1, %b1) : tensor<64x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins I64:$request, Variadic<TG_FloatTensor>:$inputs);
  let results = (outs Variadic<TG_FloatTensor>:$results);
  let assemblyFormat = "$request `(` $inputs `)` attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

#endif // TGC_DIALECT_TG_IR_TGOPS_TD
