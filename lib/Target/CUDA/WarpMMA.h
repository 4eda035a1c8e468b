//===- WarpMMA.h - a warp's mma.sync in a block program ---------*- C++ -*-===//
//
// PTX's `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}` multiplies a
// 16 x 16 A by a 16 x 8 B into a 16 x 8 f32 C, each spread over the 32 lanes
// of a warp: lane L (g = L / 4, q = L % 4) holds
//   A elements a0..a7 at row g + 8 * ((i / 2) % 2), column 2q + i % 2 + 8 * (i
//   / 4), B elements b0..b3 at row (k) 2q + i % 2 + 8 * (i / 2), column g, C
//   elements c0..c3 at row g + 8 * (i / 2), column 2q + i % 2,
// two 16-bit elements to a 32-bit register, the lower-numbered one in the
// low half (PTX ISA, "Matrix fragments for mma.m16n8k16 with floating
// point type").
//
// A block program's warps load their fragments from shared tiles into
// per-thread buffers; then either `nvvm.mma.sync` runs (the GPU), or each
// lane computes its C elements from the other lanes' fragments by the
// layouts above (--gpu-emulate, which runs threads one after another).
// The emulation checks the fragment loads and the accumulator stores, which
// are the same code in both; what it cannot check is the hardware.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_LIB_TARGET_CUDA_WARPMMA_H
#define TGC_LIB_TARGET_CUDA_WARPMMA_H

#include "BlockProgram.h"

namespace tgc::cuda {

/// How a block program runs its warps' multiply-adds.
enum class WarpMMAKind {
  /// `nvvm.mma.sync` (sm_80 and later).
  NVVM,
  /// The layouts' arithmetic, one lane after another: for the host.
  Emulated,
};

/// The per-lane fragment positions of mma.m16n8k16, as (row, column)
/// offsets added to (g, 2q) for A and C, and to (2q, g) for B.
struct FragmentOffset {
  int64_t row, col;
};
FragmentOffset fragmentOffsetA(int64_t element);
FragmentOffset fragmentOffsetB(int64_t element);
FragmentOffset fragmentOffsetC(int64_t element);

/// Builds one warp-level 16 x 8 x 16 multiply-add per call, in a block
/// program whose threads are numbered so that lanes of a warp are 32
/// consecutive threads.
class WarpMMABuilder {
public:
  /// `element` is bf16 or f16.
  WarpMMABuilder(BlockProgramBuilder &program, mlir::Type element,
                 WarpMMAKind kind)
      : program(program), element(element), kind(kind) {}

  /// Lane coordinates of thread `t`: (g, q) = (lane / 4, lane % 4), and the
  /// warp's first thread.
  struct Lane {
    mlir::Value g, q, warpBase;
  };
  Lane lane(mlir::OpBuilder &b, mlir::Value thread);

  /// One A fragment (8 elements) or B fragment (4 elements) per thread:
  /// the buffer to load them into.
  mlir::Value fragmentsA() { return program.perThread({8}, element); }
  mlir::Value fragmentsB(int64_t count) {
    return program.perThread({count, 4}, element);
  }

  /// acc[t][accIndex..][0..3] += A(fragA[t]) * B(fragB[t][bIndex]), the
  /// warp's 16 x 8 x 16 product. With WarpMMAKind::NVVM this is
  /// `nvvm.mma.sync` on the thread's own fragments; emulated, it reads the
  /// warp's other lanes' fragments, so the fragments must have been
  /// written in an earlier phase.
  void multiplyAdd(mlir::OpBuilder &b, mlir::Value thread, const Lane &lane,
                   mlir::Value fragA, mlir::Value fragB, int64_t bIndex,
                   mlir::Value acc, int64_t accIndex);

  WarpMMAKind getKind() const { return kind; }

private:
  mlir::Value packPair(mlir::OpBuilder &b, mlir::Value low, mlir::Value high);

  BlockProgramBuilder &program;
  mlir::Type element;
  WarpMMAKind kind;
};

} // namespace tgc::cuda

#endif // TGC_LIB_TARGET_CUDA_WARPMMA_H
