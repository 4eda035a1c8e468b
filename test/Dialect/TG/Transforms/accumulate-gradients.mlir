// tg-accumulate-gradients: the step runs once per micro-batch on row slices
// of twice-as-large inputs, and averages its loss and gradients.
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff --tg-accumulate-gradients=micro-batches=2 | FileCheck %s
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff --tg-accumulate-gradients=micro-batches=1 | FileCheck %s --check-prefix=ONE
// RUN: not tgc-opt %S/optimizer.mlir --tg-autodiff --tg-optimizer --tg-accumulate-gradients=micro-batches=2 2>&1 | FileCheck %s --check-prefix=AFTER

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x8xf32> {tg.input = "x"}, %[[T:[^:]*]]: tensor<4xi32> {tg.input = "t"})
// CHECK-DAG: %[[X0:.*]] = tg.slice %[[X]] axis 0 start 0 size 2 : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-DAG: %[[T0:.*]] = tg.slice %[[T]] axis 0 start 0 size 2 : tensor<4xi32> -> tensor<2xi32>
// CHECK: %[[L0:.*]] = tg.cross_entropy %{{.*}}, %[[T0]]
// CHECK: %[[GW0:.*]] = tg.matmul %{{.*}}, %[[X0]] {transpose_lhs}
// CHECK-DAG: %[[X1:.*]] = tg.slice %[[X]] axis 0 start 2 size 2
// CHECK-DAG: %[[T1:.*]] = tg.slice %[[T]] axis 0 start 2 size 2
// CHECK: %[[L1:.*]] = tg.cross_entropy %{{.*}}, %[[T1]]
// CHECK: %[[GW1:.*]] = tg.matmul %{{.*}}, %[[X1]] {transpose_lhs}
// CHECK: %[[LS:.*]] = tg.add %[[L0]], %[[L1]]
// CHECK: %[[GWS:.*]] = tg.add %[[GW0]], %[[GW1]]
// CHECK: %[[HALF:.*]] = tg.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[L:.*]] = tg.mul %[[LS]], %[[HALF]]
// CHECK: %[[GW:.*]] = tg.mul %[[GWS]], %[[HALF]]
// CHECK: return %[[L]], %[[GW]]

// ONE-LABEL: func.func @train_step
// ONE-SAME: tensor<2x8xf32> {tg.input = "x"}
// ONE-NOT: tg.slice

// With loss scaling the 0-d loss_scale input seeds every micro-batch's
// reverse sweep whole (it has no rows to slice).
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff=loss-scale --tg-accumulate-gradients=micro-batches=2 | FileCheck %s --check-prefix=SCALED
// SCALED-LABEL: func.func @train_step
// SCALED-SAME: tensor<4x8xf32> {tg.input = "x"}, %{{[^:]*}}: tensor<4xi32> {tg.input = "t"}, %[[S:[^:]*]]: tensor<f32> {tg.input = "loss_scale"})
// SCALED: tg.cross_entropy_grad %[[S]]
// SCALED: tg.cross_entropy_grad %[[S]]

// RUN: not tgc-opt %S/Inputs/step-declaration.mlir --tg-accumulate-gradients=micro-batches=2 2>&1 | FileCheck %s --check-prefix=NOBODY
// NOBODY: error: tg-accumulate-gradients: @train_step must have a single block
// AFTER: error: tg-accumulate-gradients: run it right after tg-autodiff (before tg-optimizer)
