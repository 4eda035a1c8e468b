// The neutral lowering follows the op's tg.tiling, whatever target chose it
// (any tile size; a remainder tile where it does not divide the sequence),
// and lowers an op without one untiled.
// RUN: tgc-opt %s --convert-tg-to-linalg --canonicalize | FileCheck %s

// Tiles of 48 over 100 positions: two full query tiles and a remainder of
// 4; G = 2 rows per position.
// CHECK-LABEL: func.func @tiled
// CHECK: scf.for %[[Q:.*]] = %c0 to %c96 step %c48 iter_args({{.*}}) -> (tensor<1x200x4xf32>, tensor<1x200xf32>)
// CHECK: tensor.extract_slice {{.*}} [1, 96, 4]
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x96x48xf32>
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x8x48xf32>
// CHECK-NOT: tensor<1x200x100xf32>
// CHECK: return
func.func @tiled(%q: tensor<1x100x2x4xf32>, %k: tensor<1x100x1x4xf32>) -> tensor<1x100x2x4xf32> {
  %o, %lse = tg.attention %q, %k, %k {causal, tg.tiling = #tg.attention_tiling<tile = 48, task_tile = 0, transposed_operands = false>} : tensor<1x100x2x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1x4xf32> -> tensor<1x100x2x4xf32>, tensor<1x100x2xf32>
  return %o : tensor<1x100x2x4xf32>
}

// A tile at least the sequence, or none: one tile, all scores at once.
// CHECK-LABEL: func.func @whole
// CHECK-NOT: scf.for
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x200x100xf32>
// CHECK-NOT: scf.for
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x200x100xf32>
// CHECK-NOT: scf.for
// CHECK: return
func.func @whole(%q: tensor<1x100x2x4xf32>, %k: tensor<1x100x1x4xf32>) -> (tensor<1x100x2x4xf32>, tensor<1x100x2x4xf32>) {
  %o, %lse = tg.attention %q, %k, %k {causal, tg.tiling = #tg.attention_tiling<tile = 512, task_tile = 0, transposed_operands = false>} : tensor<1x100x2x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1x4xf32> -> tensor<1x100x2x4xf32>, tensor<1x100x2xf32>
  %o2, %lse2 = tg.attention %q, %k, %k {causal} : tensor<1x100x2x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1x4xf32> -> tensor<1x100x2x4xf32>, tensor<1x100x2xf32>
  return %o, %o2 : tensor<1x100x2x4xf32>, tensor<1x100x2x4xf32>
}

// Row tasks of 4 rows over 10: two tasks and a remainder of 2 rows.
// CHECK-LABEL: func.func @norm
// CHECK: scf.forall (%{{.*}}) in (2)
// CHECK: tensor.extract_slice {{.*}} [4, 8] [1, 1] : tensor<10x8xf32> to tensor<4x8xf32>
// CHECK: tensor<2x8xf32>
// CHECK: return
func.func @norm(%x: tensor<2x5x8xf32>, %w: tensor<8xf32>) -> tensor<2x5x8xf32> {
  %y = tg.rms_norm %x, %w {eps = 1.0e-5 : f64, tg.tiling = #tg.row_tasks<rows = 4>} : tensor<2x5x8xf32>, tensor<8xf32> -> tensor<2x5x8xf32>
  return %y : tensor<2x5x8xf32>
}
