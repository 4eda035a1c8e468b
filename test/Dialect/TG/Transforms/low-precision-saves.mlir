// tg-low-precision-saves: what the reverse graph keeps of a mixed-precision
// step is a bf16 copy made in the forward pass, widened back before its
// first reader in the reverse graph. The forward ops still read the f32
// values.
// RUN: tgc-opt %s --split-input-file --tg-mixed-precision --tg-autodiff --tg-remat --tg-low-precision-saves | FileCheck %s
// RUN: tgc-opt %s --split-input-file --tg-mixed-precision=element-type=f16 --tg-autodiff --tg-remat --tg-low-precision-saves=element-type=f16 | FileCheck %s --check-prefix=F16
// RUN: not tgc-opt %s --split-input-file --tg-low-precision-saves=element-type=f8 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: for the --element-type option: Cannot find option named 'f8'!

// SiLU's gradient reads its input, the cross-entropy's its logits: both are
// kept as bf16 copies. The product operand silu(h) already has one, which
// the weight gradient reads.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[H:.*]] = tg.linear
// CHECK-NEXT: %[[HL:.*]] = tg.cast %[[H]] {tg.saved_copy} : tensor<2x16xf32> -> tensor<2x16xbf16>
// CHECK-NEXT: %[[S:.*]] = tg.silu %[[H]] : tensor<2x16xf32>
// CHECK-NEXT: %[[SL:.*]] = tg.cast %[[S]] : tensor<2x16xf32> -> tensor<2x16xbf16>
// CHECK: %[[L:.*]] = tg.linear
// CHECK-NEXT: %[[LL:.*]] = tg.cast %[[L]] {tg.saved_copy} : tensor<2x4xf32> -> tensor<2x4xbf16>
// CHECK-NEXT: tg.cross_entropy %[[L]]
// CHECK: %[[LW:.*]] = tg.cast %[[LL]] : tensor<2x4xbf16> -> tensor<2x4xf32>
// CHECK-NEXT: tg.cross_entropy_grad %{{.*}}, %[[LW]]
// CHECK: tg.matmul %{{.*}}, %[[SL]] {transpose_lhs}
// CHECK: %[[HW:.*]] = tg.cast %[[HL]] : tensor<2x16xbf16> -> tensor<2x16xf32>
// CHECK-NEXT: tg.silu_grad %{{.*}}, %[[HW]]
// F16-LABEL: func.func @train_step
// F16: tg.cast %{{.*}} {tg.saved_copy} : tensor<2x16xf32> -> tensor<2x16xf16>
func.func @forward(%w1: tensor<16x8xf32> {tg.param = "w1"},
                   %w2: tensor<4x16xf32> {tg.param = "w2"},
                   %a: tensor<2x8xf32> {tg.input = "a"},
                   %y: tensor<2xi32> {tg.input = "y"}) -> tensor<f32> {
  %h = tg.linear %a, %w1 : tensor<2x8xf32>, tensor<16x8xf32> -> tensor<2x16xf32>
  %s = tg.silu %h : tensor<2x16xf32>
  %l = tg.linear %s, %w2 : tensor<2x16xf32>, tensor<4x16xf32> -> tensor<2x4xf32>
  %loss = tg.cross_entropy %l, %y : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Attention: Q (a view of the projection, which nothing else keeps) gets a
// copy; the output reuses the output projection's bf16 operand through the
// reshape; the logsumexp stays f32 (keepsResultAtFullPrecision).
// CHECK-LABEL: func.func @train_step
// CHECK: %[[Q:.*]] = tg.reshape
// CHECK-NEXT: %[[QL:.*]] = tg.cast %[[Q]] {tg.saved_copy} : tensor<1x4x2x4xf32> -> tensor<1x4x2x4xbf16>
// CHECK-NEXT: %[[O:.*]], %[[LSE:.*]] = tg.attention %[[Q]], %[[Q]], %[[Q]]
// CHECK-NEXT: %[[R:.*]] = tg.reshape %[[O]]
// CHECK-NEXT: %[[RL:.*]] = tg.cast %[[R]] : tensor<1x4x8xf32> -> tensor<1x4x8xbf16>
// CHECK-NOT: tg.saved_copy
// CHECK: tg.linear %[[RL]]
// CHECK: %[[QW:.*]] = tg.cast %[[QL]] : tensor<1x4x2x4xbf16> -> tensor<1x4x2x4xf32>
// CHECK-NEXT: %[[OW:.*]] = tg.cast %[[RL]] : tensor<1x4x8xbf16> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[OV:.*]] = tg.reshape %[[OW]] : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
// CHECK-NEXT: tg.attention_grad %{{.*}}, %[[QW]], %[[QW]], %[[QW]], %[[OV]], %[[LSE]] {causal}
func.func @forward(%wq: tensor<8x8xf32> {tg.param = "wq"},
                   %wo: tensor<5x8xf32> {tg.param = "wo"},
                   %a: tensor<1x4x8xf32> {tg.input = "a"},
                   %y: tensor<1x4xi32> {tg.input = "y"}) -> tensor<f32> {
  %p = tg.linear %a, %wq : tensor<1x4x8xf32>, tensor<8x8xf32> -> tensor<1x4x8xf32>
  %q = tg.reshape %p : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %o, %lse = tg.attention %q, %q, %q {causal} : tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32>, tensor<1x4x2x4xf32> -> tensor<1x4x2x4xf32>, tensor<1x4x2xf32>
  %r = tg.reshape %o : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
  %l = tg.linear %r, %wo : tensor<1x4x8xf32>, tensor<5x8xf32> -> tensor<1x4x5xf32>
  %loss = tg.cross_entropy %l, %y : tensor<1x4x5xf32>, tensor<1x4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
