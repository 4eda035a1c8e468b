// RUN: tgc-opt %s --tgc-cpu-choose-tiles="score-tile-bytes=8192 task-bytes=0" --convert-tg-to-linalg --canonicalize | FileCheck %s
// RUN: tgc-opt %s --convert-tg-to-linalg --canonicalize | FileCheck %s --check-prefix=WHOLE

// A sliding window of W = 40 over S = 100 positions, tiles of T = 32
// (G = 2, f32: T·G·T·4 = 8192 bytes). Each query tile visits its diagonal
// tile first (masked: the future and, where W < T, the past beyond the
// window), then the key tiles that cross some query's window edge, masked
// (far = (W + T − 2) / T = 2 tiles back, from max(0, q − 64)), then those
// inside every query's window, unmasked (near = (W − T) / T = 0 for a full
// tile: none). Key tiles before the window are never visited.

// CHECK-LABEL: func.func @attention_window
// CHECK: scf.for %[[Q:.*]] = %c0 to %c96 step %c32
// The diagonal tile: the future masked; W > T, so nothing past the window.
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x64x32xf32>
// CHECK: arith.cmpi ugt
// CHECK-NOT: arith.cmpi sle
// CHECK: arith.select
// The edge tiles: from max(0, q − 2·T) up to q, the window's edge masked
// (key c hidden when c + W <= row position + q − key offset).
// CHECK: %[[BACK:.*]] = arith.subi %[[Q]], %c64
// CHECK: %[[FROM:.*]] = arith.maxsi %[[BACK]], %c0
// CHECK: scf.for %[[K:.*]] = %[[FROM]] to %[[Q]] step %c32
// CHECK: %[[LAG:.*]] = arith.subi %[[Q]], %[[K]]
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x64x32xf32>
// CHECK: %[[SINCE:.*]] = arith.addi %{{.*}}, %[[LAG]]
// CHECK: %[[REACH:.*]] = arith.addi %{{.*}}, %c40
// CHECK: arith.cmpi sle, %[[REACH]], %[[SINCE]]
// CHECK-NOT: arith.cmpi ugt
// CHECK: scf.yield
// CHECK: scf.yield
// The remainder (4 positions at 96): its diagonal tile, one edge tile at 32
// and one tile inside every query's window at 64 (near = (40 − 4) / 32 = 1),
// unmasked; never the tile at 0.
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x8x4xf32>
// CHECK: arith.cmpi ugt
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 32] [1, 4, 32]
// CHECK: arith.cmpi sle
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 64] [1, 4, 32]
// CHECK-NOT: arith.cmpi
// CHECK: return

// One tile for the whole sequence: the diagonal tile alone, masked both ways.
// WHOLE-LABEL: func.func @attention_window
// WHOLE-NOT: scf.for
// WHOLE: linalg.batch_matmul {{.*}} -> tensor<1x200x100xf32>
// WHOLE: arith.cmpi ugt
// WHOLE: arith.cmpi sle
// WHOLE: arith.ori
// WHOLE-NOT: scf.for
// WHOLE: return
func.func @attention_window(%q: tensor<1x100x2x4xf32>, %k: tensor<1x100x1x4xf32>) -> tensor<1x100x2x4xf32> {
  %o, %lse = tg.attention %q, %k, %k {causal, window = 40 : i64} : tensor<1x100x2x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1x4xf32> -> tensor<1x100x2x4xf32>, tensor<1x100x2xf32>
  return %o : tensor<1x100x2x4xf32>
}
