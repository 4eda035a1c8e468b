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
  ];
}

#endif // TGC_DIALECT_TG_IR_TGINTERFACES_TD
