//===- Passes.h - the CPU backend's passes ----------------------*- C++ -*-===//
#ifndef TGC_TARGET_CPU_PASSES_H
#define TGC_TARGET_CPU_PASSES_H

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Target/CPU/CPUTarget.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace tgc::cpu {

#define GEN_PASS_DECL
#include "tgc/Target/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tgc/Target/CPU/Passes.h.inc"

/// The options of `tgc-vectorize-matmuls`, the CPU's matmul schedule as
/// one pipeline of the passes above (each takes the options it needs).
struct VectorizeMatmulsOptions
    : public mlir::PassPipelineOptions<VectorizeMatmulsOptions> {
  Option<unsigned> vectorBits{
      *this, "vector-bits",
      llvm::cl::desc("Width of the target's vector registers in bits"),
      llvm::cl::init(512)};
  Option<unsigned> vectorRegisters{*this, "vector-registers",
                                   llvm::cl::desc("Number of vector registers"),
                                   llvm::cl::init(32)};
  Option<int64_t> l1CacheBytes{
      *this, "l1-cache-bytes",
      llvm::cl::desc("L1 data cache per core in bytes"), llvm::cl::init(32768)};
  Option<int64_t> l2CacheBytes{*this, "l2-cache-bytes",
                               llvm::cl::desc("L2 cache per core in bytes"),
                               llvm::cl::init(1048576)};
  ListOption<int64_t> tiles{
      *this, "tiles",
      llvm::cl::desc("Override the model: MT,NT,KT,MR,NR for every matmul")};
  Option<bool> fillTiles{
      *this, "fill-tiles",
      llvm::cl::desc("Do a product's fill, epilogue and layout changes "
                     "inside its output tiles (tgc-cpu-mark-tile-fusions)"),
      llvm::cl::init(false)};
  Option<bool> amx{*this, "amx",
                   llvm::cl::desc("The target has AMX bf16 tiles (tdpbf16ps)"),
                   llvm::cl::init(false)};
  Option<bool> bf16Dot{
      *this, "bf16-dot",
      llvm::cl::desc("The target has AVX512-BF16 dot products (vdpbf16ps) on "
                     "512-bit vectors"),
      llvm::cl::init(false)};
  Option<int64_t> threads{
      *this, "threads",
      llvm::cl::desc(
          "Threads the output tiles are balanced for (0 or 1: none)"),
      llvm::cl::init(0)};
};

/// tgc-vectorize-matmuls: few-row products streamed, tile fusions marked
/// (with fill-tiles), bf16 products emitted, the other narrow operands
/// widened, output tiles, the marked fusions done in them, register tiles
/// vectorised to FMAs.
void buildVectorizeMatmulsPipeline(mlir::OpPassManager &pm,
                                   const VectorizeMatmulsOptions &options);

/// Whether tgc-vectorize-matmuls tiles `op` (a matmul, or a batch matmul of
/// a layout it schedules, on static f32 buffers, or a product of bf16/f16
/// operands with an f32 output, widened to f32 or on AVX512-BF16 dot
/// products; not one on AMX tiles, with `amx`) and, with fill-tiles, does
/// its neighbours (tgc::findAccumulatorInit, tgc::findEpilogue) inside each
/// output tile.
bool fusesIntoProductTiles(mlir::Operation *op, bool amx);

/// Whether, with fill-tiles, `op`'s tiles read an operand in the heads'
/// layout in place (tgc::findHeadsOperand) and write its output into a new
/// layout (tgc::findOutputTranspose): f32 products only (a widened
/// product's tiles read and write its f32 copies).
bool readsHeadsInPlace(mlir::Operation *op);

} // namespace tgc::cpu

#endif // TGC_TARGET_CPU_PASSES_H
