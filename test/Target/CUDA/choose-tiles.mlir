// The GPU's tiles of attention: batched tiles over every sequence and head
// (each tile's products and softmax one kernel over all heads), no per-head
// tasks; norms stay whole (one kernel per statistic over all rows).
// RUN: tgc-opt %s --tgc-gpu-choose-tiles | FileCheck %s
// RUN: tgc-opt %s --tgc-gpu-choose-tiles="score-tile-bytes=8192" | FileCheck %s --check-prefix=SMALL
// RUN: tgc-opt %s --tgc-gpu-choose-tiles="score-tile-bytes=0" | FileCheck %s --check-prefix=NONE
// NONE-NOT: tg.tiling

// f32, B = 2, Hkv = 2, G = 2: √(4 MiB / 32) = 362 → 352 positions;
// √(8192 / 32) = 16.
// CHECK-LABEL: func.func @attention
// CHECK: tg.attention {{.*}}tg.tiling = #tg.attention_tiling<tile = 352, task_tile = 0, transposed_operands = true>
// CHECK: tg.attention_grad {{.*}}tg.tiling = #tg.attention_tiling<tile = 352, task_tile = 0, transposed_operands = true>
// CHECK: tg.rms_norm
// CHECK-NOT: tg.tiling
// CHECK: return
// SMALL: tg.attention {{.*}}tg.tiling = #tg.attention_tiling<tile = 16, task_tile = 0, transposed_operands = true>
func.func @attention(%q: tensor<2x1000x4x8xf32>, %k: tensor<2x1000x2x8xf32>, %g: tensor<2x1000x4x8xf32>, %w: tensor<8xf32>) -> (tensor<2x1000x4x8xf32>, tensor<2x1000x2x8xf32>, tensor<2x1000x4x8xf32>) {
  %o, %lse = tg.attention %q, %k, %k {causal} : tensor<2x1000x4x8xf32>, tensor<2x1000x2x8xf32>, tensor<2x1000x2x8xf32> -> tensor<2x1000x4x8xf32>, tensor<2x1000x4xf32>
  %dq, %dk, %dv = tg.attention_grad %g, %q, %k, %k, %o, %lse {causal} : tensor<2x1000x4x8xf32>, tensor<2x1000x2x8xf32>, tensor<2x1000x2x8xf32>, tensor<2x1000x4xf32>
  %y = tg.rms_norm %q, %w {eps = 1.0e-5 : f64} : tensor<2x1000x4x8xf32>, tensor<8xf32> -> tensor<2x1000x4x8xf32>
  return %dq, %dk, %y : tensor<2x1000x4x8xf32>, tensor<2x1000x2x8xf32>, tensor<2x1000x4x8xf32>
}
