// The optimizer update appended to @train_step.
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer | FileCheck %s --check-prefix=ADAMW
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=adamw grad-clip=1.0 weight-decay=0.1 beta2=0.95" | FileCheck %s --check-prefix=CLIP
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=sgd" | FileCheck %s --check-prefix=SGD
// RUN: tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=sgd momentum=0.9" | FileCheck %s --check-prefix=MOMENTUM
// RUN: tgc-opt %s --tgc-training-graph="optimizer=sgd" | FileCheck %s --check-prefix=SGD
// RUN: not tgc-opt %s --tg-optimizer 2>&1 | FileCheck %s --check-prefix=NOSTEP
// RUN: not tgc-opt %s --tg-autodiff --tg-optimizer="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tgc-opt %s --tg-autodiff --tg-optimizer --tg-optimizer 2>&1 | FileCheck %s --check-prefix=TWICE

func.func @forward(%w: tensor<4x8xf32> {tg.param = "w"}, %b: tensor<4xf32> {tg.param = "b"},
                   %x: tensor<2x8xf32> {tg.input = "x"}, %t: tensor<2xi32> {tg.input = "t"}) -> tensor<f32> {
  %y = tg.linear %x, %w, %b : tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %loss = tg.cross_entropy %y, %t : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME: (%[[W:[^:]*]]: tensor<4x8xf32> {tg.param = "w"}, %[[B:[^:]*]]: tensor<4xf32> {tg.param = "b"},
// ADAMW-SAME: %[[MW:[^:]*]]: tensor<4x8xf32> {tg.state = "exp_avg.w"}, %[[MB:[^:]*]]: tensor<4xf32> {tg.state = "exp_avg.b"},
// ADAMW-SAME: %[[VW:[^:]*]]: tensor<4x8xf32> {tg.state = "exp_avg_sq.w"}, %[[VB:[^:]*]]: tensor<4xf32> {tg.state = "exp_avg_sq.b"},
// ADAMW-SAME: tensor<2x8xf32> {tg.input = "x"}, %{{.*}}: tensor<2xi32> {tg.input = "t"},
// ADAMW-SAME: %[[LR:[^:]*]]: tensor<f32> {tg.input = "lr"}, %[[STEP:[^:]*]]: tensor<f32> {tg.input = "step"})
// ADAMW-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "grad_norm"}, tensor<4x8xf32> {tg.param = "w"}, tensor<4xf32> {tg.param = "b"}, tensor<4x8xf32> {tg.state = "exp_avg.w"}, tensor<4xf32> {tg.state = "exp_avg.b"}, tensor<4x8xf32> {tg.state = "exp_avg_sq.w"}, tensor<4xf32> {tg.state = "exp_avg_sq.b"})
// ADAMW: %[[SW:.*]] = tg.sum_squares %[[GW:.*]] : tensor<4x8xf32>
// ADAMW: %[[SB:.*]] = tg.sum_squares %[[GB:.*]] : tensor<4xf32>
// ADAMW: %[[NORM:.*]] = tg.global_norm %[[SW]], %[[SB]] : tensor<f64>, tensor<f64>
// ADAMW-NOT: tg.clip_factor
// ADAMW: %[[PW:.*]], %[[NMW:.*]], %[[NVW:.*]] = tg.adamw_update %[[W]], %[[GW]], %[[MW]], %[[VW]], %[[LR]], %[[STEP]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64} : tensor<4x8xf32>, tensor<4x8xf32>
// ADAMW: %[[PB:.*]], %[[NMB:.*]], %[[NVB:.*]] = tg.adamw_update %[[B]], %[[GB]], %[[MB]], %[[VB]], %[[LR]], %[[STEP]]
// ADAMW: return %{{.*}}, %[[NORM]], %[[PW]], %[[PB]], %[[NMW]], %[[NMB]], %[[NVW]], %[[NVB]]

// CLIP: %[[SW:.*]] = tg.sum_squares %[[GW:.*]] :
// CLIP: %[[SB:.*]] = tg.sum_squares %[[GB:.*]] :
// CLIP: %[[NORM:.*]] = tg.global_norm %[[SW]], %[[SB]] :
// CLIP: %[[F:.*]] = tg.clip_factor %[[NORM]] {max_norm = 1.000000e+00 : f64} : tensor<f32>
// CLIP: %[[CW:.*]] = tg.mul %[[GW]], %[[F]] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
// CLIP: %[[CB:.*]] = tg.mul %[[GB]], %[[F]]
// CLIP: tg.adamw_update %{{.*}}, %[[CW]], {{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64}

// SGD-LABEL: func.func @train_step
// SGD-SAME: (%[[W:[^:]*]]: tensor<4x8xf32> {tg.param = "w"}, %[[B:[^:]*]]: tensor<4xf32> {tg.param = "b"}, %{{.*}}: tensor<2x8xf32> {tg.input = "x"}, %{{.*}}: tensor<2xi32> {tg.input = "t"}, %[[LR:[^:]*]]: tensor<f32> {tg.input = "lr"}, %{{.*}}: tensor<f32> {tg.input = "step"})
// SGD-NOT: tg.state
// SGD: %[[PW:.*]] = tg.sgd_update %[[W]], %{{.*}}, %[[LR]] : tensor<4x8xf32>
// SGD: %[[PB:.*]] = tg.sgd_update %[[B]], %{{.*}}, %[[LR]] : tensor<4xf32>
// SGD: return %{{.*}}, %{{.*}}, %[[PW]], %[[PB]] :

// MOMENTUM: %{{.*}}: tensor<4x8xf32> {tg.state = "momentum_buffer.w"}
// MOMENTUM: tg.sgd_momentum_update {{.*}} {momentum = 9.000000e-01 : f64} : tensor<4x8xf32>, tensor<4x8xf32>

// NOSTEP: error: tg-optimizer: no function @train_step (run tg-autodiff first)
// UNKNOWN: for the --optimizer option: Cannot find option named 'lion'
// TWICE: error: tg-optimizer: @train_step must return (loss, tg.output values, one tg.grad per tg.param that is not tg.frozen); run tg-autodiff first and tg-optimizer once
