// tg-freeze marks the parameters whose whole name matches a regular
// expression; it refuses patterns that freeze nothing or everything.
// RUN: tgc-opt %s --tg-freeze='pattern=layers\.0\..*' | FileCheck %s
// RUN: tgc-opt %s --tg-freeze='pattern=.*\.(weight|bias)' --tg-freeze='pattern=' 2>&1 | FileCheck %s --check-prefix=ALT
// RUN: tgc-opt %s --tg-freeze | FileCheck %s --check-prefix=NONE
// RUN: not tgc-opt %s --tg-freeze='pattern=layers\.0' 2>&1 | FileCheck %s --check-prefix=PARTIAL
// RUN: not tgc-opt %s --tg-freeze='pattern=.*' 2>&1 | FileCheck %s --check-prefix=ALL
// RUN: not tgc-opt %s --tg-freeze='pattern=layers\.(0' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tgc-opt %s --tgc-training-graph='freeze=layers\.0\..* optimizer=adamw' | FileCheck %s --check-prefix=STEP

// CHECK-LABEL: func.func @forward
// CHECK-SAME: {tg.frozen, tg.param = "layers.0.weight"}
// CHECK-SAME: {tg.frozen, tg.param = "layers.0.bias"}
// CHECK-SAME: %{{[^:]*}}: tensor<4x16xf32> {tg.param = "layers.1.weight"}
// CHECK-SAME: %{{[^:]*}}: tensor<2x8xf32> {tg.input = "features"}

// A whole-name match: "layers.1.weight" matches, "layers.1.scale" does not.
// ALT: {tg.frozen, tg.param = "layers.0.weight"}
// ALT-SAME: {tg.frozen, tg.param = "layers.0.bias"}
// ALT-SAME: {tg.frozen, tg.param = "layers.1.weight"}
// ALT-SAME: %{{[^:]*}}: tensor<4xf32> {tg.param = "layers.1.scale"}

// NONE-NOT: tg.frozen

// PARTIAL: error: tg-freeze: the pattern 'layers\.0' matches none of the 4 parameters of @forward (it must match a whole name, such as 'layers.0.weight')
// ALL: error: tg-freeze: the pattern '.*' freezes all 4 parameters of @forward: nothing to train
// BAD: error: tg-freeze: 'layers\.(0' is not a regular expression:

// The train step: no gradient, state or update for the frozen layer, and
// no backward pass below the trainable one.
// STEP-LABEL: func.func @train_step
// STEP-SAME: (%{{[^:]*}}: tensor<16x8xf32> {tg.frozen, tg.param = "layers.0.weight"}, %{{[^:]*}}: tensor<16xf32> {tg.frozen, tg.param = "layers.0.bias"}, %{{[^:]*}}: tensor<4x16xf32> {tg.param = "layers.1.weight"}, %{{[^:]*}}: tensor<4xf32> {tg.param = "layers.1.scale"}, %{{[^:]*}}: tensor<4x16xf32> {tg.state = "exp_avg.layers.1.weight"}, %{{[^:]*}}: tensor<4xf32> {tg.state = "exp_avg.layers.1.scale"}, %{{[^:]*}}: tensor<4x16xf32> {tg.state = "exp_avg_sq.layers.1.weight"}, %{{[^:]*}}: tensor<4xf32> {tg.state = "exp_avg_sq.layers.1.scale"}, %{{[^:]*}}: tensor<2x8xf32> {tg.input = "features"}
// STEP-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "grad_norm"}, tensor<4x16xf32> {tg.param = "layers.1.weight"}, tensor<4xf32> {tg.param = "layers.1.scale"}, tensor<4x16xf32> {tg.state = "exp_avg.layers.1.weight"}, tensor<4xf32> {tg.state = "exp_avg.layers.1.scale"}, tensor<4x16xf32> {tg.state = "exp_avg_sq.layers.1.weight"}, tensor<4xf32> {tg.state = "exp_avg_sq.layers.1.scale"})
// STEP-NOT: tg.relu_grad
// STEP-COUNT-2: tg.sum_squares
// STEP-NOT: tg.relu_grad
// STEP: %[[NORM:.*]] = tg.global_norm %{{.*}}, %{{[^ ]*}} : tensor<f64>, tensor<f64>
// STEP: return %{{.*}}, %[[NORM]]
func.func @forward(%w0: tensor<16x8xf32> {tg.param = "layers.0.weight"},
                   %b0: tensor<16xf32> {tg.param = "layers.0.bias"},
                   %w1: tensor<4x16xf32> {tg.param = "layers.1.weight"},
                   %s1: tensor<4xf32> {tg.param = "layers.1.scale"},
                   %x: tensor<2x8xf32> {tg.input = "features"},
                   %y: tensor<2xi32> {tg.input = "labels"}) -> tensor<f32> {
  %h = tg.linear %x, %w0 : tensor<2x8xf32>, tensor<16x8xf32> -> tensor<2x16xf32>
  %hb = tg.add %h, %b0 : tensor<2x16xf32>, tensor<16xf32> -> tensor<2x16xf32>
  %a = tg.relu %hb : tensor<2x16xf32>
  %l = tg.linear %a, %w1 : tensor<2x16xf32>, tensor<4x16xf32> -> tensor<2x4xf32>
  %ls = tg.mul %l, %s1 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %loss = tg.cross_entropy %ls, %y : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
