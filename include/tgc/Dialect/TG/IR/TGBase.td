//===- TGBase.td - tg dialect definition and shared constraints -*- tablegen -*-===//
//
// The `tg` dialect: forward graphs of transformer training, on builtin ranked
// tensors. Everything autodiff, remat and lowering need is an op here.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECT_TG_IR_TGBASE_TD
#define TGC_DIALECT_TG_IR_TGBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def TG_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::mlir::tg";
  let summary = "Transformer training graphs";
  let description = [{
    The `tg` dialect describes the forward graph of a transformer (or MLP)
    training step at the level ML engineers think in: embedding, linear,
    norms, attention, RoPE, activations and the loss. Every op works on builtin
    ranked tensors with static shapes; floating point values are f64, f32,
    bf16 or f16, token ids and labels are i32 or i64.

    Function arguments carry the role of each input as an argument attribute:

    * `tg.param = "model.layers.0.self_attn.q_proj.weight"` marks a
      weight and gives its Hugging Face state-dict name; a `tg.frozen` unit
      attribute beside it (tg-freeze, `tgc --freeze`) makes it a frozen
      parameter: loaded and saved, but given no gradient and no update;
    * `tg.input = "input_ids"` marks a data input (token ids, targets,
      features, labels, and the optimizer's `lr` and `step`), never
      differentiated;
    * `tg.state = "exp_avg.<param>"` marks optimizer state.

    Results of generated functions are named the same way: `tg.output`
    (`"loss"`, `"grad_norm"`), `tg.grad = "<param>"` (a parameter's
    gradient), `tg.param` (an updated parameter) and `tg.state`.

    Layout conventions: attention-shaped tensors are `[B, S, H, D]`
    (batch, sequence, heads, head dim), exactly what reshaping a projection's
    `[B, S, H*D]` output gives, so no transposes are needed around attention.
  }];
  let dependentDialects = [];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Argument attribute naming a parameter.
    static constexpr ::llvm::StringLiteral kParamAttrName = "tg.param";
    /// Unit argument attribute beside `tg.param`: the parameter is frozen
    /// (no gradient, no optimizer state, no update).
    static constexpr ::llvm::StringLiteral kFrozenAttrName = "tg.frozen";
    /// Argument attribute naming a data input.
    static constexpr ::llvm::StringLiteral kInputAttrName = "tg.input";
    /// Argument/result attribute naming optimizer state.
    static constexpr ::llvm::StringLiteral kStateAttrName = "tg.state";
    /// Result attribute naming an output such as the loss.
    static constexpr ::llvm::StringLiteral kOutputAttrName = "tg.output";
    /// Result attribute naming the parameter a gradient belongs to.
    static constexpr ::llvm::StringLiteral kGradAttrName = "tg.grad";
    /// Op attribute: index of the transformer (or MLP) layer the op belongs
    /// to, set by the front end; `tg-remat --remat=layers` checkpoints there.
    static constexpr ::llvm::StringLiteral kLayerAttrName = "tg.layer";
    /// Argument/result attribute (tg-shard-optimizer): this state is the
    /// process's shard of the state of the named parameter.
    static constexpr ::llvm::StringLiteral kShardOfAttrName = "tg.shard_of";
    /// Argument/result attribute (tg-shard-parameters): this parameter is
    /// the process's shard of a whole tensor of the given type.
    static constexpr ::llvm::StringLiteral kShardedAttrName = "tg.sharded";
    /// Attribute of a ZeRO-1 @train_step: the processes it runs as.
    static constexpr ::llvm::StringLiteral kProcessesAttrName = "tg.processes";
    /// Attribute of a ZeRO-3 @train_step (tg-shard-parameters): how far
    /// ahead its gathers start, and the time model's estimate for it.
    static constexpr ::llvm::StringLiteral kGatherPrefetchAttrName =
        "tg.gather_prefetch";
    /// Op attribute set by users: "save" or "recompute"; wins over every
    /// rematerialisation policy.
    static constexpr ::llvm::StringLiteral kRematAttrName = "tg.remat";
    /// Op attribute marking a forward op that tg-remat cloned into the
    /// reverse graph.
    static constexpr ::llvm::StringLiteral kRecomputedAttrName = "tg.recomputed";
    /// Op attribute marking a low-precision copy of a saved activation that
    /// tg-low-precision-saves made in the forward pass (only the reverse
    /// graph reads it, so it is not in the loss's slice).
    static constexpr ::llvm::StringLiteral kSavedCopyAttrName = "tg.saved_copy";
    /// Op attribute set by a target before convert-tg-to-linalg: how it
    /// tiles the op (a TGAttrs.td lowering configuration).
    static constexpr ::llvm::StringLiteral kTilingAttrName = "tg.tiling";
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def TG_FloatElement : AnyTypeOf<[F64, F32, BF16, F16]>;
def TG_FloatTensor : StaticShapeTensorOf<[F64, F32, BF16, F16]>;
def TG_IndexTensor : StaticShapeTensorOf<[I32, I64]>;
def TG_AnyTensor : StaticShapeTensorOf<[F64, F32, BF16, F16, I32, I64]>;
def TG_ScalarFloatTensor : 0DTensorOf<[F64, F32, BF16, F16]>;
// Optimizer scalars (learning rate, step) are always f32.
def TG_F32Scalar : Type<And<[TensorOf<[F32]>.predicate, HasAnyRankOfPred<[0]>]>,
                        "0-d tensor of f32", "::mlir::TensorType">,
                   BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;
// Sums of squares for the global norm are accumulated in f64.
def TG_F64Scalar : Type<And<[TensorOf<[F64]>.predicate, HasAnyRankOfPred<[0]>]>,
                        "0-d tensor of f64", "::mlir::TensorType">,
                   BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF64Type())">;

#endif // TGC_DIALECT_TG_IR_TGBASE_TD
