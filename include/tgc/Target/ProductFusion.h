//===- ProductFusion.h - loops a target fuses into a product ----*- C++ -*-===//
//
// A target that tiles matrix products can do neighbours of a product inside
// each output tile, while the tile is in cache, instead of as passes over
// whole buffers: the fill that zeroes the product's output, an elementwise
// loop right after it that reads the product (a residual add, the sum of a
// tensor's gradients), and layout changes of attention's operands and
// results. These matchers find them on the bufferized step, for the CPU
// schedule and for the count `tgc stats` makes, so the two agree.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_TARGET_PRODUCTFUSION_H
#define TGC_TARGET_PRODUCTFUSION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace tgc {

/// The buffer a view is a view of (any other value: itself).
mlir::Value rootBuffer(mlir::Value v);

/// Whether `op`, or an op nested in it, may write the buffer `root` (or a
/// view of it): a write effect on it or on an unknown value, or effects
/// that cannot be known.
bool mayWriteBuffer(mlir::Operation *op, mlir::Value root);

/// The linalg.fill of a constant (on buffers) that initialises `product`'s
/// output just before it: it writes the very buffer the product accumulates
/// into, and no op between the two (at most a few, in the same block) reads
/// or writes that buffer or any view of it.
mlir::linalg::FillOp findAccumulatorInit(mlir::linalg::LinalgOp product);

/// The first of `type`'s trailing dimensions whose sizes multiply to `n`
/// (the columns of an [M, N] view of it), or -1 if none do.
int64_t columnDims(mlir::MemRefType type, int64_t n);

/// Whether `v` holds the M x N elements of a 2-D product's output in the
/// same order: a row-major static buffer whose trailing dimensions make N
/// (an expand_shape of one is row-major too: [B, S, D], or [B, S, H, hd]
/// for N = H·hd), so that an output tile's rows and columns are a
/// rectangle of it once collapsed to [M, N].
bool isRowMajorLike(mlir::Value v, int64_t m, int64_t n);

/// Whether `epilogue` runs over the product's output `acc` itself: its
/// loops are acc's dimensions, each operand on acc is acc with the identity
/// map, the other inputs are read through projected permutations (a row's
/// statistic broadcast along it) and the other outputs written through
/// permutations (each element once, so tiles never write the same one), so
/// an output tile's offsets and sizes select each operand's tile. Such a
/// loop may use linalg.index (a causal mask) and may update acc in place.
bool isDirectEpilogue(mlir::linalg::GenericOp epilogue, mlir::Value acc);

/// The elementwise loop that reads `product`'s output right after it, as
/// its epilogue: the next op touching the output buffer is a
/// linalg.generic with only parallel loops that reads the output and
/// either
///  - runs over the output itself (isDirectEpilogue): 2-D products and
///    batch matmuls (attention's scale and causal mask on the scores, in
///    place; its dS = P·(dP − D) reading dP); or
///  - (2-D products) has identity maps and no index ops, and all its
///    operands hold M x N elements in the output's order (isRowMajorLike),
///    reading the output directly or through one expand_shape (a residual
///    add in [B, S, D]).
/// It writes buffers the product does not read (several: SwiGLU's gradient
/// loop writes the gate's and up's gradients and the recomputed product),
/// or (direct) updates the output in place. Later ops may still read the
/// output (SwiGLU's up projection, kept for the gradient, feeds silu(g)·u):
/// each tile is whole before its epilogue reads it. No op between
/// the two (at most a few) touches any of the loop's buffers, whose buffers
/// exist before the product or are allocated (or reshaped) in between and
/// can move before it. Products with a whole buffer as output only.
mlir::linalg::GenericOp findEpilogue(mlir::linalg::LinalgOp product);

/// The layout change that reads a batch matmul's output right after it and
/// is its only reader: attention's gradients dQ, dK and dV, computed per
/// (batch, head) as [B·H, S, N] and moved to the sequence's layout
/// [B, S, H, N] (`linalg.transpose` of an expand_shape [[0, 1], [2],
/// [3, ...]] of the output, permutation [0, 2, 1, 3, ...]) into a buffer
/// that exists before the product. The output must start from a fill
/// (findAccumulatorInit) and have no epilogue: a target that writes each
/// output tile straight into the new layout, filling it there, never makes
/// the [B·H, S, N] copy.
mlir::linalg::TransposeOp findOutputTranspose(mlir::linalg::LinalgOp product);

/// A layout change of a buffer in the sequence's layout [B, S, H, ...] into
/// heads ([B, H, S, ...]: `linalg.transpose` [0, 2, 1, 3, ...]) whose
/// result is read only through one collapse_shape [[0, 1], [2], [3, ...]]
/// ([B·H, S, N]) by batch matmuls that `fuses` accepts, as inputs:
/// attention's dO, read by dP = dO·Vᵀ and dV = Pᵀ·dO. A target whose tiles
/// read their rows of each head straight from the sequence's layout never
/// makes the copy. Nothing between the transpose and its last reader may
/// write the source. Returns the collapse_shape the products read.
mlir::memref::CollapseShapeOp
findHeadsOperand(mlir::linalg::TransposeOp transpose,
                 llvm::function_ref<bool(mlir::Operation *)> fuses);

} // namespace tgc

#endif // TGC_TARGET_PRODUCTFUSION_H
