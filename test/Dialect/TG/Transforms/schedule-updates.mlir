// tg-schedule-updates: each parameter's sum of squares and update move to
// the earliest point the graph allows.
// RUN: tgc-opt %s --split-input-file --tg-schedule-updates | FileCheck %s
// RUN: tgc-opt %s --split-input-file --tg-schedule-updates --tg-schedule-updates | FileCheck %s
// RUN: tgc-opt %S/optimizer.mlir --tgc-training-graph="optimizer=sgd fusion=none" | FileCheck %s --check-prefix=MLP
// RUN: tgc-opt %S/optimizer.mlir --tgc-training-graph="optimizer=sgd fusion=none optimizer-in-backward=false" | FileCheck %s --check-prefix=END
// RUN: not tgc-opt %S/optimizer.mlir --tg-schedule-updates 2>&1 | FileCheck %s --check-prefix=NOSTEP

// The update of %w waits for the last reader of %w (%late), not for the
// end of the step; the sum of squares runs as soon as %g exists.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[G:.*]] = tg.mul %arg2, %arg2
// CHECK-NEXT: %[[S:.*]] = tg.sum_squares %[[G]]
// CHECK-NEXT: %[[LATE:.*]] = tg.add %arg0, %arg2
// CHECK-NEXT: %[[P:.*]] = tg.sgd_update %arg0, %[[G]], %arg1
// CHECK-NEXT: %[[MORE:.*]] = tg.mul %[[LATE]], %[[LATE]]
// CHECK-NEXT: %[[N:.*]] = tg.global_norm %[[S]]
// CHECK-NEXT: return %[[N]], %[[P]], %[[MORE]]
func.func @train_step(%w: tensor<4xf32> {tg.param = "w"}, %lr: tensor<f32> {tg.input = "lr"},
                      %x: tensor<4xf32> {tg.input = "x"})
    -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>) {
  %g = tg.mul %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %late = tg.add %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %more = tg.mul %late, %late : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s = tg.sum_squares %g : tensor<4xf32>
  %n = tg.global_norm %s : tensor<f64>
  %p = tg.sgd_update %w, %g, %lr : tensor<4xf32>
  return %n, %p, %more : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// An update placed before a reader of its parameter (as tg-remat's clones
// can be) moves after it; so does a momentum update past a reader of its
// state.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[CLONE:.*]] = tg.add %arg0, %arg3
// CHECK-NEXT: %[[READ:.*]] = tg.add %arg1, %arg3
// CHECK-NEXT: %[[P:.*]], %[[M:.*]] = tg.sgd_momentum_update %arg0, %[[CLONE]], %arg1, %arg2, %arg2
// CHECK-NEXT: return %[[P]], %[[M]], %[[READ]]
func.func @train_step(%w: tensor<4xf32> {tg.param = "w"}, %m: tensor<4xf32> {tg.state = "momentum_buffer.w"},
                      %lr: tensor<f32> {tg.input = "lr"}, %x: tensor<4xf32> {tg.input = "x"})
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %clone = tg.add %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %p, %pm = tg.sgd_momentum_update %w, %clone, %m, %lr, %lr {momentum = 0.9 : f64} : tensor<4xf32>, tensor<4xf32>
  %read = tg.add %m, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %p, %pm, %read : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// With global-norm clipping the updates wait for the norm of every
// gradient: only the sums of squares move.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[G1:.*]] = tg.mul %arg2, %arg2
// CHECK-NEXT: tg.sum_squares %[[G1]]
// CHECK-NEXT: %[[G2:.*]] = tg.add %arg2, %arg2
// CHECK-NEXT: tg.sum_squares %[[G2]]
// CHECK-NEXT: %[[N:.*]] = tg.global_norm
// CHECK-NEXT: %[[F:.*]] = tg.clip_factor %[[N]]
// CHECK: tg.sgd_update %arg0
// CHECK: tg.sgd_update %arg1
func.func @train_step(%a: tensor<4xf32> {tg.param = "a"}, %b: tensor<4xf32> {tg.param = "b"},
                      %x: tensor<4xf32> {tg.input = "x"}, %lr: tensor<f32> {tg.input = "lr"})
    -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>) {
  %g1 = tg.mul %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %g2 = tg.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s1 = tg.sum_squares %g1 : tensor<4xf32>
  %s2 = tg.sum_squares %g2 : tensor<4xf32>
  %n = tg.global_norm %s1, %s2 : tensor<f64>, tensor<f64>
  %f = tg.clip_factor %n {max_norm = 1.0 : f64} : tensor<f32>
  %c1 = tg.mul %g1, %f : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %c2 = tg.mul %g2, %f : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %pa = tg.sgd_update %a, %c1, %lr : tensor<4xf32>
  %pb = tg.sgd_update %b, %c2, %lr : tensor<4xf32>
  return %n, %pa, %pb : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// The whole pipeline on a linear layer: both updates run inside the
// backward sweep, before the global norm that ends the step.
// MLP-LABEL: func.func @train_step
// MLP: tg.cross_entropy_grad
// MLP: tg.sgd_update
// MLP: tg.sgd_update
// MLP-NEXT: tg.global_norm
// MLP-NEXT: return
// With optimizer-in-backward=false the updates follow the norm.
// END-LABEL: func.func @train_step
// END: tg.global_norm
// END: tg.sgd_update
// END: tg.sgd_update
// END-NEXT: return

// RUN: not tgc-opt %S/Inputs/step-declaration.mlir --tg-schedule-updates 2>&1 | FileCheck %s --check-prefix=NOBODY
// NOBODY: error: tg-schedule-updates: @train_step must have a single block
// NOSTEP: error: tg-schedule-updates: no function @train_step (run tg-autodiff and tg-optimizer first)
