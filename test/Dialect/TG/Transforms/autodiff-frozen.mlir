// Activity analysis with frozen parameters (tg.frozen): no gradient result
// for them, no weight-gradient product, and no backward pass below the
// last trainable parameter.
// RUN: tgc-opt %s --tg-autodiff --split-input-file --verify-diagnostics | FileCheck %s

// The top layer frozen: the input gradient still flows through its weight
// to the trainable layer below, but its weight gradient (dLᵀ·a) is never
// built.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[W0:.*]]: tensor<16x8xf32> {tg.param = "layers.0.weight"}, %[[W1:.*]]: tensor<4x16xf32> {tg.frozen, tg.param = "layers.1.weight"}, %[[X:.*]]: tensor<2x8xf32> {tg.input = "features"}, %[[Y:.*]]: tensor<2xi32> {tg.input = "labels"})
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<16x8xf32> {tg.grad = "layers.0.weight"})
// CHECK: %[[A:.*]] = tg.relu
// CHECK: %[[DL:.*]] = tg.cross_entropy_grad
// CHECK-NOT: {transpose_lhs} : tensor<2x4xf32>, tensor<2x16xf32> -> tensor<4x16xf32>
// CHECK: %[[DA:.*]] = tg.matmul %[[DL]], %[[W1]] : tensor<2x4xf32>, tensor<4x16xf32> -> tensor<2x16xf32>
// CHECK-NOT: {transpose_lhs} : tensor<2x4xf32>, tensor<2x16xf32> -> tensor<4x16xf32>
// CHECK: %[[DH:.*]] = tg.relu_grad %[[DA]], %[[A]]
// CHECK: %[[DW0:.*]] = tg.matmul %[[DH]], %[[X]] {transpose_lhs} : tensor<2x16xf32>, tensor<2x8xf32> -> tensor<16x8xf32>
// CHECK: return %{{.*}}, %[[DW0]] : tensor<f32>, tensor<16x8xf32>
func.func @forward(%w0: tensor<16x8xf32> {tg.param = "layers.0.weight"},
                   %w1: tensor<4x16xf32> {tg.frozen, tg.param = "layers.1.weight"},
                   %x: tensor<2x8xf32> {tg.input = "features"},
                   %y: tensor<2xi32> {tg.input = "labels"}) -> tensor<f32> {
  %h = tg.linear %x, %w0 : tensor<2x8xf32>, tensor<16x8xf32> -> tensor<2x16xf32>
  %a = tg.relu %h : tensor<2x16xf32>
  %l = tg.linear %a, %w1 : tensor<2x16xf32>, tensor<4x16xf32> -> tensor<2x4xf32>
  %loss = tg.cross_entropy %l, %y : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The bottom layer frozen: nothing upstream trains, so the top layer
// computes its weight gradient only; no input gradient, no relu_grad, no
// product for the frozen weight.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<4x16xf32> {tg.grad = "layers.1.weight"})
// CHECK: %[[A:.*]] = tg.relu
// CHECK: %[[DL:.*]] = tg.cross_entropy_grad
// CHECK-NEXT: %[[DW1:.*]] = tg.matmul %[[DL]], %[[A]] {transpose_lhs} : tensor<2x4xf32>, tensor<2x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW1]] : tensor<f32>, tensor<4x16xf32>
// CHECK-NOT: tg.relu_grad
func.func @forward(%w0: tensor<16x8xf32> {tg.frozen, tg.param = "layers.0.weight"},
                   %w1: tensor<4x16xf32> {tg.param = "layers.1.weight"},
                   %x: tensor<2x8xf32> {tg.input = "features"},
                   %y: tensor<2xi32> {tg.input = "labels"}) -> tensor<f32> {
  %h = tg.linear %x, %w0 : tensor<2x8xf32>, tensor<16x8xf32> -> tensor<2x16xf32>
  %a = tg.relu %h : tensor<2x16xf32>
  %l = tg.linear %a, %w1 : tensor<2x16xf32>, tensor<4x16xf32> -> tensor<2x4xf32>
  %loss = tg.cross_entropy %l, %y : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A frozen embedding table under a trainable head: no tg.embedding_grad
// scatter, and no input gradient of the head (it would reach only the
// table).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<8x4xf32> {tg.grad = "head"})
// CHECK: %[[DL:.*]] = tg.cross_entropy_grad
// CHECK-NOT: tensor<6x8xf32>, tensor<8x4xf32> -> tensor<6x4xf32>
// CHECK: %[[DW:.*]] = tg.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
// CHECK-NOT: tg.embedding_grad
// CHECK: return %{{.*}}, %[[DW]] : tensor<f32>, tensor<8x4xf32>
func.func @forward(%e: tensor<8x4xf32> {tg.frozen, tg.param = "embed"},
                   %w: tensor<8x4xf32> {tg.param = "head"},
                   %ids: tensor<2x3xi32> {tg.input = "input_ids"},
                   %t: tensor<2x3xi32> {tg.input = "targets"}) -> tensor<f32> {
  %h = tg.embedding %e, %ids : tensor<8x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %l = tg.linear %h, %w : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
  %loss = tg.cross_entropy %l, %t {ignore_index = -100 : i64} : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Tied weights, frozen: the table is both the embedding and the head, and
// only the norm between them trains. Its gradient needs the head's input
// gradient (through the frozen table) but neither of the table's products.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<4xf32> {tg.grad = "norm"})
// CHECK: %[[DN:.*]] = tg.matmul %{{.*}}, %{{.*}} : tensor<6x8xf32>, tensor<8x4xf32> -> tensor<6x4xf32>
// CHECK-NOT: {transpose_lhs}
// CHECK-NOT: tg.embedding_grad
// CHECK: %[[DX:.*]], %[[DG:.*]] = tg.rms_norm_grad
// CHECK: return %{{.*}}, %[[DG]] : tensor<f32>, tensor<4xf32>
func.func @forward(%e: tensor<8x4xf32> {tg.frozen, tg.param = "embed"},
                   %g: tensor<4xf32> {tg.param = "norm"},
                   %ids: tensor<2x3xi32> {tg.input = "input_ids"},
                   %t: tensor<2x3xi32> {tg.input = "targets"}) -> tensor<f32> {
  %h = tg.embedding %e, %ids : tensor<8x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %n = tg.rms_norm %h, %g {eps = 1.0e-05 : f64} : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %l = tg.linear %n, %e : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
  %loss = tg.cross_entropy %l, %t {ignore_index = -100 : i64} : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// tg.frozen marks a parameter, and only that.
// expected-error@+1 {{'tg.frozen' on argument #0 must be a unit attribute beside 'tg.param'}}
func.func @forward(%x: tensor<2x8xf32> {tg.frozen, tg.input = "features"}) -> tensor<f32> {
  %loss = tg.reduce_sum %x [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %loss : tensor<f32>
}
