// RUN: tgc-opt %s --convert-tg-to-linalg="fuse-updates=true" | FileCheck %s --check-prefix=FUSED
// RUN: tgc-opt %s --convert-tg-to-linalg | FileCheck %s --check-prefix=LOOPS

// With fuse-updates an AdamW update is one loop: it reads the parameter,
// the gradient and both moments (and the 0-d learning rate and step) and
// writes the parameter and both moments. Without, a loop per moment and a
// third that reads the new moments back.
// FUSED-LABEL: func.func @adamw
// FUSED: %[[R:.*]]:3 = linalg.generic {{.*}} ins(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>, tensor<f32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// FUSED: math.powf
// FUSED: math.sqrt
// FUSED: linalg.yield
// FUSED-NOT: linalg.generic
// FUSED: return %[[R]]#0, %[[R]]#1, %[[R]]#2
// LOOPS-LABEL: func.func @adamw
// LOOPS: %[[M:.*]] = linalg.generic {{.*}} ins(%arg1, %arg2 :
// LOOPS: %[[V:.*]] = linalg.generic {{.*}} ins(%arg1, %arg3 :
// LOOPS: %[[P:.*]] = linalg.generic {{.*}} ins(%arg0, %[[M]], %[[V]], %arg4, %arg5 :
// LOOPS: return %[[P]], %[[M]], %[[V]]
func.func @adamw(%w: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %p, %nm, %nv = tg.adamw_update %w, %g, %m, %v, %lr, %step {beta1 = 9.000000e-01 : f64, beta2 = 0.999 : f64, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-01 : f64} : tensor<4x8xf32>, tensor<4x8xf32>
  return %p, %nm, %nv : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// SGD with momentum: one loop writing the parameter and the buffer.
// FUSED-LABEL: func.func @momentum
// FUSED: %[[R:.*]]:2 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>)
// FUSED-NOT: linalg.generic
// FUSED: return %[[R]]#0, %[[R]]#1
// LOOPS-LABEL: func.func @momentum
// LOOPS: %[[B:.*]] = linalg.generic
// LOOPS: %[[P:.*]] = linalg.generic {{.*}} ins(%arg0, %[[B]], %arg3 :
// LOOPS: return %[[P]], %[[B]]
func.func @momentum(%w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %p, %pm = tg.sgd_momentum_update %w, %g, %m, %lr, %step {momentum = 0.9 : f64} : tensor<4xf32>, tensor<4xf32>
  return %p, %pm : tensor<4xf32>, tensor<4xf32>
}
