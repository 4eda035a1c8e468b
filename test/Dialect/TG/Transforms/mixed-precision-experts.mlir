// A grouped product (an expert layer's) goes on bf16 operands, its weights
// and input cast once, the offsets left integers; the result stays f32.
// Its gradients: dx through the grouped product with the other orientation,
// the weights' through tg.grouped_weight_grad on bf16 operands.
// RUN: tgc-opt %s --tg-mixed-precision | FileCheck %s
// RUN: tgc-opt %s --tg-mixed-precision --tg-autodiff | FileCheck %s --check-prefix=GRAD

// CHECK-LABEL: func.func @forward
// CHECK-DAG: %[[X:.*]] = tg.cast %arg0 {{.*}} -> tensor<8x4xbf16>
// CHECK-DAG: %[[W0:.*]] = tg.cast %arg2 {{.*}} -> tensor<6x4xbf16>
// CHECK-DAG: %[[W1:.*]] = tg.cast %arg3 {{.*}} -> tensor<6x4xbf16>
// CHECK: tg.grouped_matmul %[[X]], %arg1, %[[W0]], %[[W1]] {transpose_weights} : tensor<8x4xbf16>, tensor<3xi32>, tensor<6x4xbf16>, tensor<6x4xbf16> -> tensor<8x6xf32>
// GRAD-LABEL: func.func @train_step
// GRAD: tg.grouped_matmul {{.*}} : tensor<8x6xbf16>, tensor<3xi32>, tensor<6x4xbf16>, tensor<6x4xbf16> -> tensor<8x4xf32>
// GRAD: tg.grouped_weight_grad {{.*}} : tensor<8x6xbf16>, tensor<8x4xbf16>, tensor<3xi32> -> tensor<6x4xf32>, tensor<6x4xf32>
func.func @forward(%x: tensor<8x4xf32> {tg.param = "x"}, %off: tensor<3xi32> {tg.input = "offsets"}, %w0: tensor<6x4xf32> {tg.param = "w0"}, %w1: tensor<6x4xf32> {tg.param = "w1"}) -> tensor<f32> {
  %y = tg.grouped_matmul %x, %off, %w0, %w1 {transpose_weights} : tensor<8x4xf32>, tensor<3xi32>, tensor<6x4xf32>, tensor<6x4xf32> -> tensor<8x6xf32>
  %l = tg.reduce_sum %y [0, 1] : tensor<8x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}
