// The reverse graph each gradient rule builds, and what activity analysis
// leaves out.
// RUN: tgc-opt %s --tg-autodiff --split-input-file --verify-diagnostics | FileCheck %s

// An MLP: the first layer computes dW only, never an input gradient.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[W0:.*]]: tensor<16x8xf32> {tg.param = "layers.0.weight"}, %[[W1:.*]]: tensor<4x16xf32> {tg.param = "layers.1.weight"}, %[[X:.*]]: tensor<2x8xf32> {tg.input = "features"}, %[[Y:.*]]: tensor<2xi32> {tg.input = "labels"})
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<16x8xf32> {tg.grad = "layers.0.weight"}, tensor<4x16xf32> {tg.grad = "layers.1.weight"})
// CHECK: %[[H:.*]] = tg.linear %[[X]], %[[W0]]
// CHECK: %[[A:.*]] = tg.relu %[[H]]
// CHECK: %[[L:.*]] = tg.linear %[[A]], %[[W1]]
// CHECK: %[[LOSS:.*]] = tg.cross_entropy %[[L]], %[[Y]]
// CHECK: %[[ONE:.*]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DL:.*]] = tg.cross_entropy_grad %[[ONE]], %[[L]], %[[Y]]
// CHECK: %[[DA:.*]] = tg.matmul %[[DL]], %[[W1]] : tensor<2x4xf32>, tensor<4x16xf32> -> tensor<2x16xf32>
// CHECK: %[[DW1:.*]] = tg.matmul %[[DL]], %[[A]] {transpose_lhs} : tensor<2x4xf32>, tensor<2x16xf32> -> tensor<4x16xf32>
// CHECK: %[[DH:.*]] = tg.relu_grad %[[DA]], %[[A]]
// CHECK: %[[DW0:.*]] = tg.matmul %[[DH]], %[[X]] {transpose_lhs} : tensor<2x16xf32>, tensor<2x8xf32> -> tensor<16x8xf32>
// CHECK-NOT: tg.matmul %[[DH]], %[[W0]]
// CHECK: return %[[LOSS]], %[[DW0]], %[[DW1]]
func.func @forward(%w0: tensor<16x8xf32> {tg.param = "layers.0.weight"},
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

// Fan-out: a value used twice gets the sum of both gradients; a bias that
// broadcasts is reduced back to its shape; linear on 3-d inputs flattens rows.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[W:[^:]*]]: tensor<4x4xf32>
// CHECK-SAME: %[[B:[^:]*]]: tensor<4xf32>
// CHECK: %[[Y:.*]] = tg.linear %[[X:.*]], %[[W]] : tensor<2x3x4xf32>, tensor<4x4xf32> -> tensor<2x3x4xf32>
// CHECK: %[[Z:.*]] = tg.add %[[Y]], %[[B]] : tensor<2x3x4xf32>, tensor<4xf32>
// CHECK: %[[R:.*]] = tg.add %[[Z]], %[[Y]]
// CHECK: %[[DZ:.*]] = tg.cross_entropy_grad
// CHECK: %[[DB:.*]] = tg.reduce_sum %[[DZ2:.*]] [0, 1] : tensor<2x3x4xf32> -> tensor<4xf32>
// CHECK: %[[DY:.*]] = tg.add %[[DYA:.*]], %[[DYB:.*]] : tensor<2x3x4xf32>, tensor<2x3x4xf32>
// CHECK: %[[DYF:.*]] = tg.reshape %[[DY]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK: %[[XF:.*]] = tg.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK: %[[DW:.*]] = tg.matmul %[[DYF]], %[[XF]] {transpose_lhs} : tensor<6x4xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
// CHECK: return %{{.*}}, %[[DW]], %[[DB]]
func.func @forward(%w: tensor<4x4xf32> {tg.param = "w"}, %b: tensor<4xf32> {tg.param = "b"},
                   %x: tensor<2x3x4xf32> {tg.input = "x"}, %t: tensor<2x3xi32> {tg.input = "t"}) -> tensor<f32> {
  %y = tg.linear %x, %w : tensor<2x3x4xf32>, tensor<4x4xf32> -> tensor<2x3x4xf32>
  %z = tg.add %y, %b : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>
  %r = tg.add %z, %y : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %loss = tg.cross_entropy %r, %t : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A parameter the loss does not depend on gets zeros; tied weights (one
// parameter used by the embedding and the output projection) sum both paths.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[E:[^:]*]]: tensor<8x4xf32> {tg.param = "embed"}
// CHECK-DAG: %[[DE1:.*]] = tg.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
// CHECK-DAG: %[[DE2:.*]] = tg.embedding_grad %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<2x3xi32> -> tensor<8x4xf32>
// CHECK: %[[DE:.*]] = tg.add %[[DE1]], %[[DE2]] : tensor<8x4xf32>, tensor<8x4xf32>
// CHECK: %[[ZERO:.*]] = tg.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %{{.*}}, %[[DE]], %[[ZERO]]
func.func @forward(%e: tensor<8x4xf32> {tg.param = "embed"}, %unused: tensor<3xf32> {tg.param = "unused"},
                   %ids: tensor<2x3xi32> {tg.input = "input_ids"}, %t: tensor<2x3xi32> {tg.input = "targets"}) -> tensor<f32> {
  %h = tg.embedding %e, %ids : tensor<8x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %l = tg.linear %h, %e : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
  %loss = tg.cross_entropy %l, %t {ignore_index = -100 : i64} : tensor<2x3x8xf32>, tensor<2x3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Attention with RoPE and GQA: one attention_grad reading q, k, v and the
// output; RoPE's gradient is the inverse rotation; softmax-free rules for
// reshape/transpose.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[Q:.*]] = tg.rope %[[Q0:.*]] : tensor<1x4x4x2xf32>
// CHECK: %[[O:.*]], %[[LSE:.*]] = tg.attention %[[Q]], %[[K:.*]], %[[V:.*]] {causal}
// CHECK: %{{.*}}, %[[DK:.*]], %[[DV:.*]] = tg.attention_grad %{{.*}}, %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]] {causal} : tensor<1x4x4x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x4xf32>
// CHECK: tg.rope %{{.*}} {inverse} : tensor<1x4x4x2xf32>
func.func @forward(%wq: tensor<8x8xf32> {tg.param = "q"}, %wkv: tensor<4x8xf32> {tg.param = "kv"},
                   %x: tensor<1x4x8xf32> {tg.input = "x"}, %t: tensor<1x4xi32> {tg.input = "t"}) -> tensor<f32> {
  %q = tg.linear %x, %wq : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
  %kv = tg.linear %x, %wkv : tensor<1x4x8xf32>, tensor<4x8xf32> -> tensor<1x4x4xf32>
  %q4 = tg.reshape %q : tensor<1x4x8xf32> -> tensor<1x4x4x2xf32>
  %k4 = tg.reshape %kv : tensor<1x4x4xf32> -> tensor<1x4x2x2xf32>
  %qr = tg.rope %q4 : tensor<1x4x4x2xf32>
  %o, %o_lse = tg.attention %qr, %k4, %k4 {causal} : tensor<1x4x4x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32> -> tensor<1x4x4x2xf32>, tensor<1x4x4xf32>
  %o2 = tg.reshape %o : tensor<1x4x4x2xf32> -> tensor<1x4x8xf32>
  %loss = tg.cross_entropy %o2, %t : tensor<1x4x8xf32>, tensor<1x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Norms and activations read the values their rules document.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[N:.*]] = tg.rms_norm %[[X:.*]], %[[G:.*]] {eps
// CHECK: %[[S:.*]] = tg.silu %[[N]]
// CHECK: %[[E:.*]] = tg.gelu %[[S]] {approximate = "tanh"}
// CHECK: %[[P:.*]] = tg.softmax %[[E]] axis -1
// CHECK: %[[LN:.*]] = tg.layer_norm %[[P]], %[[LW:.*]], %[[LB:[^ ]*]]
// CHECK: %[[SUB:.*]] = tg.sub %[[LN]], %[[N]]
// CHECK: %[[MUL:.*]] = tg.mul %[[SUB]], %[[SUB]]
// CHECK: tg.scale %{{.*}} {factor = -1.000000e+00 : f64}
// CHECK: tg.layer_norm_grad %{{.*}}, %[[P]], %[[LW]]
// CHECK: tg.softmax_grad %{{.*}}, %[[P]] axis -1
// CHECK: tg.gelu_grad %{{.*}}, %[[S]] {approximate = "tanh"}
// CHECK: tg.silu_grad %{{.*}}, %[[N]]
// CHECK: tg.rms_norm_grad %{{.*}}, %[[X]], %[[G]] {eps
func.func @forward(%g: tensor<4xf32> {tg.param = "g"}, %lw: tensor<4xf32> {tg.param = "lw"},
                   %lb: tensor<4xf32> {tg.param = "lb"},
                   %x: tensor<2x4xf32> {tg.input = "x"}, %t: tensor<2xi32> {tg.input = "t"}) -> tensor<f32> {
  %n = tg.rms_norm %x, %g {eps = 1.0e-5 : f64} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %s = tg.silu %n : tensor<2x4xf32>
  %e = tg.gelu %s {approximate = "tanh"} : tensor<2x4xf32>
  %p = tg.softmax %e axis -1 : tensor<2x4xf32>
  %ln = tg.layer_norm %p, %lw, %lb : tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %sub = tg.sub %ln, %n : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %mul = tg.mul %sub, %sub : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %loss = tg.cross_entropy %mul, %t : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Structure ops: slice → pad, transpose → inverse transpose, reduce_sum →
// broadcast, broadcast → reduce_sum, batched matmul with transposes.
// CHECK-LABEL: func.func @train_step
// CHECK-DAG: tg.pad %{{.*}} axis 1 low 2 high 0 : tensor<2x2xf32> -> tensor<2x4xf32>
// CHECK-DAG: tg.transpose %{{.*}} [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
// CHECK-DAG: tg.broadcast %{{.*}} : tensor<2x1xf32> -> tensor<2x4xf32>
// CHECK-DAG: tg.reduce_sum %{{.*}} [0] : tensor<3x2x2xf32> -> tensor<2x2xf32>
// CHECK-DAG: tg.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<3x2x2xf32>, tensor<3x2x2xf32> -> tensor<3x2x2xf32>
func.func @forward(%w: tensor<2x4xf32> {tg.param = "w"},
                   %t: tensor<3x2xi32> {tg.input = "t"}) -> tensor<f32> {
  %s = tg.slice %w axis 1 start 2 size 2 : tensor<2x4xf32> -> tensor<2x2xf32>
  %tr = tg.transpose %s [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32>
  %r = tg.reduce_sum %w [1] {keep_dims} : tensor<2x4xf32> -> tensor<2x1xf32>
  %b = tg.broadcast %tr : tensor<2x2xf32> -> tensor<3x2x2xf32>
  %m = tg.matmul %b, %b {transpose_rhs} : tensor<3x2x2xf32>, tensor<3x2x2xf32> -> tensor<3x2x2xf32>
  %sc = tg.scale %m {factor = 2.0 : f64} : tensor<3x2x2xf32>
  %a = tg.add %sc, %r : tensor<3x2x2xf32>, tensor<2x1xf32> -> tensor<3x2x2xf32>
  %loss = tg.cross_entropy %a, %t : tensor<3x2x2xf32>, tensor<3x2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// expected-error@+1 {{tg-autodiff: no function @forward to differentiate}}
module {
  func.func @not_forward() {
    return
  }
}

// -----

// expected-error@+1 {{tg-autodiff: @forward must return a 0-d floating-point loss first}}
func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----

// Values after the loss are reported, so they need a name.
// expected-error@+1 {{tg-autodiff: @forward result #1 after the loss needs a tg.output name}}
func.func @forward(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> tensor<f32> {
  // expected-error@+1 {{tg-autodiff: no gradient rule for 'arith.mulf'}}
  %0 = arith.mulf %w, %w : tensor<2xf32>
  %1 = tg.reduce_sum %0 [0] : tensor<2xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A loss that depends on attention's logsumexp: that result has no rule.
func.func @forward(%q: tensor<1x4x2x2xf32> {tg.param = "q"}) -> tensor<f32> {
  // expected-error@+1 {{'tg.attention' op has no gradient rule for its logsumexp result}}
  %o, %lse = tg.attention %q, %q, %q {causal} : tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32>, tensor<1x4x2x2xf32> -> tensor<1x4x2x2xf32>, tensor<1x4x2xf32>
  %s = tg.reduce_sum %lse [0, 1, 2] : tensor<1x4x2xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A value reported beside the loss (a load-balancing loss) follows it,
// undifferentiated.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "aux_loss"}, tensor<2xf32> {tg.grad = "w"})
func.func @forward(%w: tensor<2xf32> {tg.param = "w"}) -> (tensor<f32>, tensor<f32> {tg.output = "aux_loss"}) {
  %0 = tg.reduce_sum %w [0] : tensor<2xf32> -> tensor<f32>
  %1 = tg.mul %0, %0 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}
