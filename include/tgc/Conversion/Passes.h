//===- Passes.h - tgc conversion passes -------------------------*- C++ -*-===//
#ifndef TGC_CONVERSION_PASSES_H
#define TGC_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
class TypeConverter;
} // namespace mlir

namespace mlir::tg {

#define GEN_PASS_DECL
#include "tgc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tgc/Conversion/Passes.h.inc"

/// Attributes the lowering passes leave for later passes and the driver.
/// Module (and function) attribute: bytes of the planned static arena.
constexpr llvm::StringLiteral kArenaBytesAttrName = "tgc.arena_bytes";
/// On a planned `memref.alloc`: its byte offset in the arena.
constexpr llvm::StringLiteral kArenaOffsetAttrName = "tgc.arena_offset";
/// On functions a backend outlined from the step (no C entry point).
constexpr llvm::StringLiteral kOutlinedAttrName = "tgc.outlined";
/// On the `linalg.generic` of a `tg.cast` that tg-low-precision-saves made
/// (the forward pass's bf16/f16 copy of an activation the reverse graph
/// reads): fusion keeps it where it is, since moving it into its readers
/// would keep the wider value alive across the step instead.
constexpr llvm::StringLiteral kSavedCopyAttrName = "tgc.saved_copy";

/// Patterns of each category (lib/Conversion/TGToLinalg/*.cpp).
void populateTGDataMovementToLinalgPatterns(RewritePatternSet &patterns);
void populateTGElementwiseToLinalgPatterns(RewritePatternSet &patterns);
void populateTGMatmulToLinalgPatterns(RewritePatternSet &patterns);
/// The norms and attention are tiled as their `tg.tiling` says (a target's
/// choice, TGAttrs.td), untiled without one.
void populateTGReductionToLinalgPatterns(RewritePatternSet &patterns);
void populateTGAttentionToLinalgPatterns(RewritePatternSet &patterns);
/// `fuseUpdates`: each optimizer update (parameter and state) as one loop.
void populateTGOptimizerToLinalgPatterns(RewritePatternSet &patterns,
                                         bool fuseUpdates);
void populateTGFusedToLinalgPatterns(RewritePatternSet &patterns);
void populateTGMoEToLinalgPatterns(RewritePatternSet &patterns);

/// tg.all_reduce_start / tg.collective_wait bufferize in place into calls of
/// the runtime's collectives (tgc_allreduce_start / tgc_collective_wait).
void registerCollectiveBufferization(DialectRegistry &registry);

} // namespace mlir::tg

#endif // TGC_CONVERSION_PASSES_H
