// Norms as parallel tasks over tiles of rows (#tg.row_tasks, here as the
// CPU chooses it for a task budget): each task computes its rows' statistics and then their
// outputs from the same slices; a gradient's weight (and bias) gradient is
// summed per task into one row of a [tasks, d] tensor, then over the tasks.
// 96 bytes are three rows of 8 floats: 10 rows are three tasks and a
// remainder of one row (a single task, folded to straight-line code).
// RUN: tgc-opt %s --tgc-cpu-choose-tiles="task-bytes=96" --convert-tg-to-linalg --canonicalize | FileCheck %s
// Without a budget: a pass over the whole tensor per statistic.
// RUN: tgc-opt %s --convert-tg-to-linalg --canonicalize | FileCheck %s --check-prefix=WHOLE

// CHECK-LABEL: func.func @rms
// CHECK: %[[X:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<2x5x8xf32> into tensor<10x8xf32>
// CHECK: scf.forall (%[[T:.*]]) in (3) shared_outs(%[[OUT:.*]] = %{{.*}}) -> (tensor<10x8xf32>)
// CHECK:   %[[ROW:.*]] = arith.muli %[[T]], %c3
// CHECK:   %[[XT:.*]] = tensor.extract_slice %[[X]][%[[ROW]], 0] [3, 8] [1, 1]
// CHECK:   %[[SS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[XT]] : tensor<3x8xf32>)
// CHECK:   %[[Y:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}} ins(%[[XT]], %[[SS]], %{{.*}} : tensor<3x8xf32>, tensor<3xf32>, tensor<8xf32>)
// CHECK:   math.rsqrt
// CHECK:   tensor.parallel_insert_slice %[[Y]] into %[[OUT]][%[[ROW]], 0] [3, 8] [1, 1]
// The remainder row.
// CHECK: tensor.extract_slice %[[X]][9, 0] [1, 8] [1, 1]
// CHECK: tensor.insert_slice %{{.*}}[9, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<10x8xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [2, 5, 8]
// WHOLE-LABEL: func.func @rms
// WHOLE-NOT: scf.forall
// WHOLE: linalg.generic {{.*}}ins(%{{.*}} : tensor<2x5x8xf32>) outs(%{{.*}} : tensor<2x5xf32>)
func.func @rms(%x: tensor<2x5x8xf32>, %w: tensor<8xf32>) -> tensor<2x5x8xf32> {
  %y = tg.rms_norm %x, %w {eps = 1.0e-5 : f64} : tensor<2x5x8xf32>, tensor<8xf32> -> tensor<2x5x8xf32>
  return %y : tensor<2x5x8xf32>
}

// CHECK-LABEL: func.func @rms_grad
// CHECK: scf.forall (%[[T:.*]]) in (3) shared_outs(%[[DX:.*]] = %{{.*}}, %[[DW:.*]] = %{{.*}}) -> (tensor<10x8xf32>, tensor<4x8xf32>)
// CHECK:   %[[G:.*]] = tensor.extract_slice %{{.*}} [3, 8] [1, 1]
// CHECK:   %[[X:.*]] = tensor.extract_slice %{{.*}} [3, 8] [1, 1]
// CHECK:   %[[ROWS:.*]] = linalg.generic {{.*}}ins(%[[G]], %[[X]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<8xf32>)
// CHECK:   %[[SHARE:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}} ins(%[[G]], %[[X]], %{{.*}} : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK:   tensor.parallel_insert_slice %[[ROWS]] into %[[DX]]
// CHECK:   tensor.parallel_insert_slice %[[SHARE]] into %[[DW]][%[[T]], 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<4x8xf32>
// The remainder's share goes into the last row; dw sums the four shares.
// CHECK: %[[ALL:.*]] = tensor.insert_slice %{{.*}}[3, 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<4x8xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}} ins(%[[ALL]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<8xf32>)
func.func @rms_grad(%g: tensor<2x5x8xf32>, %x: tensor<2x5x8xf32>, %w: tensor<8xf32>) -> (tensor<2x5x8xf32>, tensor<8xf32>) {
  %dx, %dw = tg.rms_norm_grad %g, %x, %w {eps = 1.0e-5 : f64} : tensor<2x5x8xf32>, tensor<8xf32>
  return %dx, %dw : tensor<2x5x8xf32>, tensor<8xf32>
}

// LayerNorm: the weight's and the bias's shares.
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK: scf.forall ({{.*}}) in (3) shared_outs({{.*}}) -> (tensor<10x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-COUNT-3: tensor.parallel_insert_slice
// CHECK-COUNT-2: iterator_types = ["reduction", "parallel"]{{.*}} ins(%{{.*}} : tensor<4x8xf32>)
func.func @layer_norm_grad(%g: tensor<10x8xf32>, %x: tensor<10x8xf32>, %w: tensor<8xf32>) -> (tensor<10x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dw, %db = tg.layer_norm_grad %g, %x, %w {eps = 1.0e-5 : f64} : tensor<10x8xf32>, tensor<8xf32>
  return %dx, %dw, %db : tensor<10x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// A row wider than the budget: one row per task.
// CHECK-LABEL: func.func @wide_rows
// CHECK: scf.forall ({{.*}}) in (4)
// CHECK:   tensor.extract_slice {{.*}} [1, 64] [1, 1] : tensor<4x64xf32> to tensor<1x64xf32>
func.func @wide_rows(%x: tensor<4x64xf32>, %w: tensor<64xf32>) -> tensor<4x64xf32> {
  %y = tg.layer_norm %x, %w {eps = 1.0e-5 : f64} : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}
