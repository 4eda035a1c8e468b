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
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect"
  ];
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

def TGCVectorizeMatmulsPass : Pass<"tgc-vectorize-matmuls", "::mlir::ModuleOp"> {
  let summary = "Tiles and vectorises every bufferized linalg.matmul for the CPU";
  let description = [{
    For each `linalg.matmul` on static memrefs: a cache tile (up to 64x128x128)
    and a register tile (up to 8x32) chosen to divide its sizes exactly, so
    every tile is full and vectorises without masks; then vectorisation,
    hoisting of the accumulator out of the reduction loop and lowering of the
    contraction to outer products (FMAs). It is a transform-dialect schedule
    generated per tile configuration and run by the transform interpreter.
    Matmuls whose N is not a multiple of 8 stay scalar loops.
  }];
  let dependentDialects = [
    "::mlir::transform::TransformDialect", "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::affine::AffineDialect"
  ];
}

#endif // TGC_CONVERSION_PASSES_TD
