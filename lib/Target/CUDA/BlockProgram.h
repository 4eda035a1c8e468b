//===- BlockProgram.h - building block programs -----------------*- C++ -*-===//
//
// A block program (see tgc-gpu-tile-matmuls in Passes.td) is an
// scf.parallel over a 3-d grid of blocks whose body holds the block's
// shared buffers, its per-thread buffers (indexed first by the thread) and
// a sequence of phases: scf.parallel loops over the block's threads. Run
// phase after phase it is an ordinary loop nest (the CPU runs it under
// --gpu-emulate); tgc-gpu-lower-block-programs makes it a gpu.launch with a
// barrier after each phase.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_LIB_TARGET_CUDA_BLOCKPROGRAM_H
#define TGC_LIB_TARGET_CUDA_BLOCKPROGRAM_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseMap.h"

namespace tgc::cuda {

class BlockProgramBuilder {
public:
  /// Starts a block program over `grid` (x, y, z) blocks of `threads`
  /// threads, inserted before `anchor`.
  BlockProgramBuilder(mlir::Operation *anchor, std::array<int64_t, 3> grid,
                      int64_t threads);

  /// Inserts at the end of the block's body (outside any phase).
  mlir::OpBuilder &body() { return bodyBuilder; }
  mlir::Value blockId(unsigned dim) { return grid.getInductionVars()[dim]; }
  int64_t numThreads() const { return threads; }
  mlir::Location getLoc() const { return loc; }

  /// An index constant, created once at the top of the block's body.
  mlir::Value index(int64_t value);
  mlir::Value f32(double value) { return floating(value, 32); }
  /// A float constant of `bits` (32 or 64) bits.
  mlir::Value floating(double value, unsigned bits);

  /// A buffer the block's threads share (f32 unless `element` is given).
  mlir::Value shared(llvm::ArrayRef<int64_t> shape,
                     mlir::Type element = nullptr);
  /// One buffer of `shape` per thread: indexed [thread, ...] (f32 unless
  /// `element` is given).
  mlir::Value perThread(llvm::ArrayRef<int64_t> shape,
                        mlir::Type element = nullptr);

  /// A phase at `at`'s insertion point: `build(builder, thread)`.
  void phase(mlir::OpBuilder &at,
             llvm::function_ref<void(mlir::OpBuilder &, mlir::Value)> build);
  /// for (i = 0; i < n; ++i) build(builder, i), at `at`.
  void forEach(mlir::OpBuilder &at, int64_t n,
               llvm::function_ref<void(mlir::OpBuilder &, mlir::Value)> build);

  mlir::Value add(mlir::OpBuilder &b, mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::OpBuilder &b, mlir::Value x, int64_t y);
  /// x < bound (unsigned).
  mlir::Value less(mlir::OpBuilder &b, mlir::Value x, int64_t bound);

private:
  mlir::Location loc;
  mlir::MLIRContext *context;
  int64_t threads;
  mlir::scf::ParallelOp grid;
  mlir::OpBuilder bodyBuilder;
  llvm::DenseMap<int64_t, mlir::Value> indexConstants;
  llvm::DenseMap<std::pair<uint64_t, unsigned>, mlir::Value> floatConstants;
};

} // namespace tgc::cuda

#endif // TGC_LIB_TARGET_CUDA_BLOCKPROGRAM_H
