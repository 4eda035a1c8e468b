// RUN: tgc-opt %s --tg-fuse | FileCheck %s
// RUN: tgc-opt %s --tg-fuse="chunk-bytes=64 min-chunk-rows=3" | FileCheck %s --check-prefix=SMALL
// RUN: tgc-opt %s --tg-fuse="linear-cross-entropy=false" | FileCheck %s --check-prefix=OFF
// RUN: tgc-opt %s --tg-fuse --tg-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: tgc-opt %s --tg-fuse --tg-autodiff | tgc-opt | FileCheck %s --check-prefix=GRAD
// RUN: tgc-opt %s --tgc-training-graph="with-optimizer=false" | FileCheck %s --check-prefix=FOLDED
// RUN: not tgc-opt %s --tg-fuse="chunk-bytes=0" 2>&1 | FileCheck %s --check-prefix=BAD

// The LM head: a linear read only by the loss. Chunks hold at most 64 MiB
// of logits (all 12 rows here); the names of both ops survive.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: tg.linear
// CHECK-NOT: tg.cross_entropy
// CHECK: tg.linear_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<7xf32>) {chunk_rows = 12 : i64, ignore_index = -100 : i64} : tensor<3x4x5xf32>, tensor<7x5xf32>, tensor<3x4xi32> -> tensor<f32>, tensor<3x4x5xf32>, tensor<7x5xf32>, tensor<7xf32>
// 64 bytes = 2 rows of 7 logits, raised to the minimum of 3 rows.
// SMALL: tg.linear_cross_entropy {{.*}}chunk_rows = 3 : i64
// OFF: tg.linear
// OFF: tg.cross_entropy
// OFF-NOT: tg.linear_cross_entropy

// The reverse graph reads the gradients the fused op computed, scaled by
// the seed dL/dloss (1; canonicalisation folds the products away).
// GRAD-LABEL: func.func @train_step
// GRAD: %[[LOSS:.*]], %[[DH:.*]], %[[DW:.*]], %[[DB:.*]] = tg.linear_cross_entropy
// GRAD: %[[ONE:.*]] = tg.constant dense<1.000000e+00> : tensor<f32>
// GRAD-DAG: tg.mul %[[ONE]], %[[DW]]
// GRAD-DAG: tg.mul %[[ONE]], %[[DB]]
// GRAD-DAG: tg.mul %[[ONE]], %[[DH]]
// GRAD-NOT: tg.cross_entropy_grad
// GRAD-NOT: tg.matmul

// FOLDED-LABEL: func.func @train_step
// FOLDED: %[[LOSS:.*]], %[[DH:.*]], %[[DW:.*]], %[[DB:.*]] = tg.linear_cross_entropy
// FOLDED-NOT: tg.mul
// FOLDED: tg.silu_grad %[[DH]]
// FOLDED: return %[[LOSS]], %{{.*}}, %[[DW]], %[[DB]]

// BAD: tg-fuse: chunk-bytes and min-chunk-rows must be positive
func.func @forward(%x: tensor<3x4x5xf32> {tg.param = "x"},
                   %w: tensor<7x5xf32> {tg.param = "w"},
                   %b: tensor<7xf32> {tg.param = "b"},
                   %t: tensor<3x4xi32> {tg.input = "t"}) -> tensor<f32> {
  %h = tg.silu %x : tensor<3x4x5xf32>
  %logits = tg.linear %h, %w, %b : tensor<3x4x5xf32>, tensor<7x5xf32>, tensor<7xf32> -> tensor<3x4x7xf32> loc("lm_head")
  %loss = tg.cross_entropy %logits, %t {ignore_index = -100 : i64} : tensor<3x4x7xf32>, tensor<3x4xi32> -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}

// Logits read by anything else stay unfused.
// CHECK-LABEL: func.func @shared
// CHECK: tg.linear
// CHECK: tg.cross_entropy
// CHECK-NOT: tg.linear_cross_entropy
func.func @shared(%h: tensor<4x5xf32>, %w: tensor<7x5xf32>, %t: tensor<4xi32>) -> (tensor<f32>, tensor<4x7xf32>) {
  %logits = tg.linear %h, %w : tensor<4x5xf32>, tensor<7x5xf32> -> tensor<4x7xf32>
  %loss = tg.cross_entropy %logits, %t : tensor<4x7xf32>, tensor<4xi32> -> tensor<f32>
  return %loss, %logits : tensor<f32>, tensor<4x7xf32>
}

// A classifier with fewer classes (3) than inputs (9) keeps its logits: they
// are smaller than the input gradient the fused op would keep.
// CHECK-LABEL: func.func @classifier
// CHECK: tg.linear
// CHECK: tg.cross_entropy
// CHECK-NOT: tg.linear_cross_entropy
func.func @classifier(%h: tensor<4x9xf32>, %w: tensor<3x9xf32>, %t: tensor<4xi32>) -> tensor<f32> {
  %logits = tg.linear %h, %w : tensor<4x9xf32>, tensor<3x9xf32> -> tensor<4x3xf32>
  %loss = tg.cross_entropy %logits, %t : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// A soft-capped loss (Gemma 2) fuses with its cap.
// CHECK-LABEL: func.func @softcapped
// CHECK: tg.linear_cross_entropy {{.*}}softcap = 3.000000e+01 : f64
func.func @softcapped(%h: tensor<4x5xf32>, %w: tensor<7x5xf32>, %t: tensor<4xi32>) -> tensor<f32> {
  %logits = tg.linear %h, %w : tensor<4x5xf32>, tensor<7x5xf32> -> tensor<4x7xf32>
  %loss = tg.cross_entropy %logits, %t {softcap = 30.0 : f64} : tensor<4x7xf32>, tensor<4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
