//===- TGInterfaces.td - interfaces of tg ops --------------*- tablegen -*-===//

#ifndef TGC_DIALECT_TG_IR_TGINTERFACES_TD
#define TGC_DIALECT_TG_IR_TGINTERFACES_TD

include "mlir/IR/OpBase.td"

def TG_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mlir::tg";
  let description = [{
    An op that knows its own vector-Jacobian product. Reverse-mode autodiff
    (`tg-autodiff`) only talks to this interface; it never switches on op
    kinds.

    Contract of `buildGradient`:
    * The builder's insertion point is preset (after every forward op); the
      ops a rule creates carry the forward op's location, so reports can say
      which layer a backward op belongs to.
    * `resultGrads` has one entry per result: the adjoint of that result, or a
      null Value when nothing downstream needs it.
    * `needsGrad[i]` says whether operand `i` needs a gradient (it depends on
      a parameter). Rules build gradients only for those, and push exactly
      one entry per operand to `operandGrads`: the gradient, with the
      operand's exact type (broadcast dimensions already summed), or a null
      Value.
    * Rules never mutate the forward ops. Every forward value a rule reads
      (an operand or a result of the op) is used directly, so what the
      backward pass keeps alive is explicit in the IR for the memory planner
      and rematerialisation.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the gradients of the operands from those of the results.",
      "::llvm::LogicalResult", "buildGradient",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::ArrayRef<bool>":$needsGrad,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
    InterfaceMethod<
      [{Whether the reverse graph must read result `index` at full precision
        when mixed precision stores the saved activations in bf16/f16
        (`tg-low-precision-saves`): statistics such as attention's
        logsumexp, and gradients computed in the forward sweep.}],
      "bool", "keepsResultAtFullPrecision", (ins "unsigned":$index), [{}],
      [{ return false; }]>,
  ];
}

def TG_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::tg";
  let description = [{
    The work of executing an op once: multiplications inside matrix products
    and floating-point operations of everything (2 per multiply-add, a
    documented per-element count for elementwise, norm and loss ops; see
    docs/stats.md). `tgc stats` and rematerialisation read costs only
    through this interface. Every tg op implements it, with no default: a
    new or fused op that forgot its cost does not compile (ops that only
    move data say so with a zero cost).
  }];
  let methods = [
    InterfaceMethod<
      "Multiplications and FLOPs of one execution of this op.",
      "::mlir::tg::OpCost", "getCost", (ins)>,
  ];
}

#endif // TGC_DIALECT_TG_IR_TGINTERFACES_TD
