// Frozen parameters (tg.frozen) in the optimizer: no state, no update, no
// part in the global norm or the clipping, and no gradient returned.
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=adamw grad-clip=1.0 return-gradients=true" | FileCheck %s
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=sgd momentum=0.9" | FileCheck %s --check-prefix=MOMENTUM
// RUN: tgc-opt %S/Inputs/missing-gradient.mlir --tg-optimizer --verify-diagnostics

// The bias frozen, the last parameter: the state goes after it.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[W:[^:]*]]: tensor<4x8xf32> {tg.param = "w"}, %[[B:[^:]*]]: tensor<4xf32> {tg.frozen, tg.param = "b"},
// CHECK-SAME: %[[MW:[^:]*]]: tensor<4x8xf32> {tg.state = "exp_avg.w"}, %[[VW:[^:]*]]: tensor<4x8xf32> {tg.state = "exp_avg_sq.w"},
// CHECK-SAME: tensor<2x8xf32> {tg.input = "x"}
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "grad_norm"}, tensor<4x8xf32> {tg.param = "w"}, tensor<4x8xf32> {tg.state = "exp_avg.w"}, tensor<4x8xf32> {tg.state = "exp_avg_sq.w"}, tensor<4x8xf32> {tg.grad = "w"})
// CHECK: %[[SW:.*]] = tg.sum_squares %[[GW:.*]] : tensor<4x8xf32>
// CHECK-NEXT: %[[NORM:.*]] = tg.global_norm %[[SW]] : tensor<f64>
// CHECK: %[[F:.*]] = tg.clip_factor %[[NORM]]
// CHECK: %[[CW:.*]] = tg.mul %[[GW]], %[[F]]
// CHECK-NOT: tg.mul %{{.*}}, %[[F]]
// CHECK: %[[PW:.*]], %[[NMW:.*]], %[[NVW:.*]] = tg.adamw_update %[[W]], %[[CW]], %[[MW]], %[[VW]]
// CHECK-NOT: tg.adamw_update
// CHECK: return %{{.*}}, %[[NORM]], %[[PW]], %[[NMW]], %[[NVW]], %[[GW]] :
func.func @forward(%w: tensor<4x8xf32> {tg.param = "w"}, %b: tensor<4xf32> {tg.frozen, tg.param = "b"},
                   %x: tensor<2x8xf32> {tg.input = "x"}, %t: tensor<2xi32> {tg.input = "t"}) -> tensor<f32> {
  %y = tg.linear %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %loss = tg.cross_entropy %y, %t : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// MOMENTUM-LABEL: func.func @train_step
// MOMENTUM-SAME: (%[[W:[^:]*]]: tensor<4x8xf32> {tg.param = "w"}, %[[B:[^:]*]]: tensor<4xf32> {tg.frozen, tg.param = "b"}, %[[MW:[^:]*]]: tensor<4x8xf32> {tg.state = "momentum_buffer.w"}, %{{[^:]*}}: tensor<2x8xf32> {tg.input = "x"}
// MOMENTUM-NOT: momentum_buffer.b
// MOMENTUM: tg.sgd_momentum_update %[[W]]
// MOMENTUM-NOT: tg.sgd_momentum_update
