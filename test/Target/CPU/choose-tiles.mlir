// The CPU's tiles of the neutral ops: a task's score tile [T·G, T] within
// task-bytes (64 KiB by default), T a multiple of 16 above 16, at most the
// sequence; batched tiles [B·Hkv, T·G, T] within score-tile-bytes (4 MiB);
// a norm's rows per task within task-bytes.
// RUN: tgc-opt %s --tgc-cpu-choose-tiles | FileCheck %s
// RUN: tgc-opt %s --tgc-cpu-choose-tiles="score-tile-bytes=8192 task-bytes=0" | FileCheck %s --check-prefix=BATCHED
// RUN: tgc-opt %s --tgc-cpu-choose-tiles="task-bytes=96" | FileCheck %s --check-prefix=SMALL

// f32, G = 2: tasks of √(65536 / (2·4)) = 90 → 80 positions; batched tiles
// of √(4 MiB / (2·2·2·4)) = 362 → 352 positions; √(8192 / 32) = 16.
// CHECK-LABEL: func.func @attention_f32
// CHECK: tg.attention {{.*}}tg.tiling = #tg.attention_tiling<tile = 352, task_tile = 80, transposed_operands = true>
// CHECK: tg.attention_grad {{.*}}tg.tiling = #tg.attention_tiling<tile = 352, task_tile = 80, transposed_operands = true>
// BATCHED-LABEL: func.func @attention_f32
// BATCHED: tg.attention {{.*}}tg.tiling = #tg.attention_tiling<tile = 16, task_tile = 0, transposed_operands = true>
func.func @attention_f32(%q: tensor<2x1000x4x8xf32>, %k: tensor<2x1000x2x8xf32>, %g: tensor<2x1000x4x8xf32>) -> (tensor<2x1000x4x8xf32>, tensor<2x1000x2x8xf32>) {
  %o, %lse = tg.attention %q, %k, %k {causal} : tensor<2x1000x4x8xf32>, tensor<2x1000x2x8xf32>, tensor<2x1000x2x8xf32> -> tensor<2x1000x4x8xf32>, tensor<2x1000x4xf32>
  %dq, %dk, %dv = tg.attention_grad %g, %q, %k, %k, %o, %lse {causal} : tensor<2x1000x4x8xf32>, tensor<2x1000x2x8xf32>, tensor<2x1000x2x8xf32>, tensor<2x1000x4xf32>
  return %dq, %dk : tensor<2x1000x4x8xf32>, tensor<2x1000x2x8xf32>
}

// bf16 scores take half the bytes: √(65536 / 4) = 128; √(4 MiB / 16) = 512.
// A sequence shorter than a tile is one tile (7 positions).
// CHECK-LABEL: func.func @attention_bf16
// CHECK: tg.attention {{.*}}tg.tiling = #tg.attention_tiling<tile = 512, task_tile = 128, transposed_operands = true>
// CHECK: tg.attention {{.*}}tg.tiling = #tg.attention_tiling<tile = 7, task_tile = 7, transposed_operands = true>
func.func @attention_bf16(%q: tensor<2x1000x4x8xbf16>, %k: tensor<2x1000x2x8xbf16>, %s: tensor<1x7x1x8xbf16>) -> (tensor<2x1000x4x8xbf16>, tensor<1x7x1x8xbf16>) {
  %o, %lse = tg.attention %q, %k, %k {causal} : tensor<2x1000x4x8xbf16>, tensor<2x1000x2x8xbf16>, tensor<2x1000x2x8xbf16> -> tensor<2x1000x4x8xbf16>, tensor<2x1000x4xbf16>
  %o2, %lse2 = tg.attention %s, %s, %s {causal} : tensor<1x7x1x8xbf16>, tensor<1x7x1x8xbf16>, tensor<1x7x1x8xbf16> -> tensor<1x7x1x8xbf16>, tensor<1x7x1xbf16>
  return %o, %o2 : tensor<2x1000x4x8xbf16>, tensor<1x7x1x8xbf16>
}

// Attention over a key/value cache is left untiled.
// CHECK-LABEL: func.func @cached
// CHECK-NOT: tg.tiling
// CHECK: return
func.func @cached(%q: tensor<1x1x4x8xf32>, %kc: tensor<1x16x2x8xf32>, %pos: tensor<1x1xi32>) -> tensor<1x1x4x8xf32> {
  %o, %lse = tg.attention %q, %kc, %kc at %pos {causal} : tensor<1x1x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x1xi32> -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>
  return %o : tensor<1x1x4x8xf32>
}

// Rows of 8 f32 are 32 bytes: 65536 / 32 = 2048 rows per task, 96 / 32 = 3.
// A gradient's rows are its incoming gradient's. No tasks without rows to
// split (rank 1), nor without a task budget.
// CHECK-LABEL: func.func @norms
// CHECK: tg.rms_norm {{.*}}tg.tiling = #tg.row_tasks<rows = 2048>
// CHECK: tg.rms_norm_grad {{.*}}tg.tiling = #tg.row_tasks<rows = 2048>
// CHECK: tg.layer_norm {{.*}}tg.tiling = #tg.row_tasks<rows = 2048>
// CHECK-NOT: tg.tiling
// CHECK: return
// SMALL-LABEL: func.func @norms
// SMALL: tg.rms_norm {{.*}}tg.tiling = #tg.row_tasks<rows = 3>
// BATCHED-LABEL: func.func @norms
// BATCHED-NOT: tg.tiling
// BATCHED: return
func.func @norms(%x: tensor<2x5x8xf32>, %w: tensor<8xf32>, %g: tensor<2x5x8xf32>, %v: tensor<8xf32>) -> (tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<8xf32>, tensor<2x5x8xf32>, tensor<8xf32>) {
  %y = tg.rms_norm %x, %w {eps = 1.0e-5 : f64} : tensor<2x5x8xf32>, tensor<8xf32> -> tensor<2x5x8xf32>
  %dx, %dw = tg.rms_norm_grad %g, %x, %w {eps = 1.0e-5 : f64} : tensor<2x5x8xf32>, tensor<8xf32>
  %l = tg.layer_norm %x, %w {eps = 1.0e-5 : f64} : tensor<2x5x8xf32>, tensor<8xf32> -> tensor<2x5x8xf32>
  %r = tg.rms_norm %v, %w {eps = 1.0e-5 : f64} : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %y, %dx, %dw, %l, %r : tensor<2x5x8xf32>, tensor<2x5x8xf32>, tensor<8xf32>, tensor<2x5x8xf32>, tensor<8xf32>
}
