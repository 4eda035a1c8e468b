// Through tg-remat: a weight's bf16 copy is remade in the reverse graph
// (tg.recomputed) where the input gradient needs it, instead of being kept
// from the forward pass.
// RUN: tgc-opt %s --tg-mixed-precision --tg-autodiff --tg-remat | FileCheck %s
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[V2:[^:]*]]: tensor<4x16xf32> {tg.param = "v2"}
// CHECK: tg.cross_entropy_grad
// CHECK: %[[AGAIN:.*]] = tg.cast %[[V2]] {tg.recomputed} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK: tg.matmul %{{.*}}, %[[AGAIN]] : tensor<2x4xbf16>, tensor<4x16xbf16> -> tensor<2x16xf32>
func.func @forward(%v1: tensor<16x8xf32> {tg.param = "v1"},
                   %v2: tensor<4x16xf32> {tg.param = "v2"},
                   %a: tensor<2x8xf32> {tg.input = "a"},
                   %y: tensor<2xi32> {tg.input = "y"}) -> tensor<f32> {
  %h = tg.linear %a, %v1 : tensor<2x8xf32>, tensor<16x8xf32> -> tensor<2x16xf32>
  %r = tg.relu %h : tensor<2x16xf32>
  %l = tg.linear %r, %v2 : tensor<2x16xf32>, tensor<4x16xf32> -> tensor<2x4xf32>
  %loss = tg.cross_entropy %l, %y : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
