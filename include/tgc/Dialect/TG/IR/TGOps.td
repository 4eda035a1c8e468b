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

class TG_Op<string mnemonic, list<Trait> traits = []>
    : Op<TG_Dialect, mnemonic, !listconcat([Pure], traits)>;

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

def TG_ReshapeOp : TG_Op<"reshape"> {
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

def TG_TransposeOp : TG_InferredOp<"transpose"> {
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

def TG_BroadcastOp : TG_Op<"broadcast"> {
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

def TG_ReduceSumOp : TG_InferredOp<"reduce_sum"> {
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

def TG_SliceOp : TG_InferredOp<"slice"> {
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

//===----------------------------------------------------------------------===//
// Math
//===----------------------------------------------------------------------===//

def TG_MatmulOp : TG_InferredOp<"matmul"> {
  let summary = "Batched matrix product with optional operand transposes";
  let description = [{
    `lhs` is `[batch..., M, K]` (`[batch..., K, M]` with `transpose_lhs`),
    `rhs` is `[batch..., K, N]` (`[batch..., N, K]` with `transpose_rhs`); the
    result is `[batch..., M, N]`. Batch dimensions must be equal, or one side
    may be a plain matrix that is shared by every batch.

    Example:
    ```mlir
    %y = tg.matmul %x, %w : tensor<2x8x64xf32>, tensor<64x32xf32> -> tensor<2x8x32xf32>
    %s = tg.matmul %q, %k {transpose_rhs} : tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x8xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$lhs, TG_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def TG_LinearOp : TG_InferredOp<"linear"> {
  let summary = "Affine map x·Wᵀ + b with the Hugging Face weight layout";
  let description = [{
    `input` is `[..., in]`, `weight` is `[out, in]` (as `torch.nn.Linear`
    stores it), the optional `bias` is `[out]`; the result is `[..., out]`.

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

def TG_AddOp : TG_BroadcastBinaryOp<"add", [Commutative]> {
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

def TG_SubOp : TG_BroadcastBinaryOp<"sub"> {
  let summary = "Elementwise difference with broadcasting";
  let description = [{
    `lhs - rhs`, broadcast as for `tg.add`.

    Example:
    ```mlir
    %d = tg.sub %x, %mean : tensor<2x8x64xf32>, tensor<2x8x1xf32> -> tensor<2x8x64xf32>
    ```
  }];
}

def TG_MulOp : TG_BroadcastBinaryOp<"mul", [Commutative]> {
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

def TG_ScaleOp : TG_UnaryElementwiseOp<"scale"> {
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

def TG_ReluOp : TG_UnaryElementwiseOp<"relu"> {
  let summary = "Rectified linear unit, max(x, 0)";
  let description = [{
    Example:
    ```mlir
    %y = tg.relu %x : tensor<4x512xf32>
    ```
  }];
}

def TG_GeluOp : TG_UnaryElementwiseOp<"gelu"> {
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

def TG_SiluOp : TG_UnaryElementwiseOp<"silu"> {
  let summary = "Sigmoid linear unit, x·σ(x)";
  let description = [{
    The activation of SwiGLU MLPs.

    Example:
    ```mlir
    %y = tg.silu %gate : tensor<2x8x172xf32>
    ```
  }];
}

def TG_SoftmaxOp : TG_Op<"softmax", [SameOperandsAndResultType]> {
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

def TG_EmbeddingOp : TG_InferredOp<"embedding"> {
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

def TG_RMSNormOp : TG_InferredOp<"rms_norm"> {
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

def TG_LayerNormOp : TG_InferredOp<"layer_norm"> {
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

def TG_RopeOp : TG_Op<"rope", [SameOperandsAndResultType]> {
  let summary = "Rotary position embedding (Hugging Face Llama convention)";
  let description = [{
    `input` is `[B, S, H, D]` with even `D`. Position `s` (0-based) and pair
    index `i < D/2` use angle `s · theta^(-2i/D)`; the result is
    `x·cos + rotate_half(x)·sin`, where `rotate_half` swaps the two halves of
    the head dimension and negates the new first half — exactly
    `apply_rotary_pos_emb` of `transformers`' Llama.

    Example:
    ```mlir
    %q = tg.rope %q0 {theta = 1.000000e+04 : f64} : tensor<2x8x4x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "10000.0">:$theta);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def TG_AttentionOp : TG_InferredOp<"attention"> {
  let summary = "Scaled dot-product attention, multi-head or grouped-query";
  let description = [{
    Inputs are already projected, in `[B, S, H, D]` layout: `query` is
    `[B, S, Hq, D]`, `key` `[B, Skv, Hkv, D]`, `value` `[B, Skv, Hkv, Dv]`.
    `Hkv` must divide `Hq`; query head `h` attends with key/value head
    `h / (Hq / Hkv)` (grouped-query attention; `Hkv == Hq` is multi-head).
    The result is `softmax(scale · Q Kᵀ + mask) V` as `[B, S, Hq, Dv]`; with
    `causal`, position `i` sees keys `0..i` (then `S == Skv`). `scale`
    defaults to `1/sqrt(D)`.

    Example:
    ```mlir
    %o = tg.attention %q, %k, %v {causal} : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32> -> tensor<2x8x4x16xf32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$query, TG_FloatTensor:$key,
                       TG_FloatTensor:$value, UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs TG_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` type($query) `,` type($key) `,`
    type($value) `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// The scale applied to Q·Kᵀ: the attribute, or 1/sqrt(D).
    double getScaleOrDefault();
  }];
}

def TG_CrossEntropyOp : TG_InferredOp<"cross_entropy"> {
  let summary = "Mean softmax cross-entropy of logits against integer targets";
  let description = [{
    `logits` is `[N..., V]`, `targets` is `[N...]` (i32/i64 class ids). The
    result is a 0-d tensor: the mean over all positions whose target is not
    `ignore_index` of `logsumexp(logits) - logits[target]`, as
    `torch.nn.functional.cross_entropy(reduction="mean")`.

    Example:
    ```mlir
    %loss = tg.cross_entropy %logits, %targets {ignore_index = -100 : i64} : tensor<2x8x256xf32>, tensor<2x8xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins TG_FloatTensor:$logits, TG_IndexTensor:$targets,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs TG_ScalarFloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets attr-dict `:` type($logits) `,` type($targets) `->`
    type($result)
  }];
}

#endif // TGC_DIALECT_TG_IR_TGOPS_TD
