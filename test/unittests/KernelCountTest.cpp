//===- KernelCountTest.cpp - kernels and bytes of a scheduled step --------===//

#include "tgc/Target/KernelCount.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

/// A scheduled step: a product's output tiles (its fill inside, two views
/// of one operand, a buffer of its own), a host loop of four chunked
/// copies, and a sequential loop nest.
constexpr const char *kStep = R"mlir(
func.func @step(%a: memref<64x64xf32>, %b: memref<64x64xf32>,
                %c: memref<64x64xf32>) {
  %f = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %flat = memref.collapse_shape %a [[0, 1]] : memref<64x64xf32> into memref<4096xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c16) {
    %ct = memref.subview %c[%i, 0] [16, 64] [1, 1] : memref<64x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
    %at = memref.subview %a[%i, 0] [16, 64] [1, 1] : memref<64x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
    %own = memref.alloc() : memref<16x64xf32>
    linalg.fill ins(%f : f32) outs(%ct : memref<16x64xf32, strided<[64, 1], offset: ?>>)
    linalg.matmul ins(%at, %b : memref<16x64xf32, strided<[64, 1], offset: ?>>, memref<64x64xf32>) outs(%ct : memref<16x64xf32, strided<[64, 1], offset: ?>>)
    %x = memref.load %flat[%i] : memref<4096xf32>
    memref.store %x, %own[%c0, %c0] : memref<16x64xf32>
    memref.dealloc %own : memref<16x64xf32>
    scf.reduce
  }
  scf.for %k = %c0 to %c64 step %c16 {
    %av = memref.subview %a[%k, 0] [16, 64] [1, 1] : memref<64x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
    %cv = memref.subview %c[%k, 0] [16, 64] [1, 1] : memref<64x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
    memref.copy %av, %cv : memref<16x64xf32, strided<[64, 1], offset: ?>> to memref<16x64xf32, strided<[64, 1], offset: ?>>
  }
  scf.for %r = %c0 to %c64 step %c1 {
    %y = memref.load %a[%r, %c0] : memref<64x64xf32>
    memref.store %y, %b[%r, %c0] : memref<64x64xf32>
  }
  return
}
)mlir";

TEST(KernelCount, ReadsTheScheduledStep) {
  MLIRContext context;
  context.loadDialect<arith::ArithDialect, func::FuncDialect, gpu::GPUDialect,
                      linalg::LinalgDialect, memref::MemRefDialect,
                      scf::SCFDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kStep, &context);
  ASSERT_TRUE(module);
  tgc::KernelCounts counts;
  tgc::countKernels(*module, counts);
  // The tiles: one kernel (the fill and product inside are none), over a
  // (once, for all its views), b and c; not the tile's own buffer.
  // The host loop: four copies of 4 KiB views. The loop nest: a and b.
  EXPECT_EQ(counts.kernels, 1 + 4 + 1);
  EXPECT_EQ(counts.bytesMoved, 3 * 16384 + 4 * 8192 + 2 * 16384);
  ASSERT_EQ(counts.bySource.size(), 3u);
  EXPECT_EQ(counts.bySource[0].op, "scf.parallel");
  EXPECT_EQ(counts.bySource[1].op, "memref.copy");
  EXPECT_EQ(counts.bySource[1].kernels, 4);
  EXPECT_EQ(counts.bySource[2].op, "scf.for");
}

} // namespace
