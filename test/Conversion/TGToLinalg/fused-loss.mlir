// RUN: tgc-opt %s --convert-tg-to-linalg --canonicalize | FileCheck %s
// RUN: tgc-opt %s --convert-tg-to-linalg --canonicalize --one-shot-bufferize="bufferize-function-boundaries" --cse --canonicalize | FileCheck %s --check-prefix=BUF

// 11 rows in chunks of 4: a loop over the two full chunks, then the last 3
// rows with static shapes. Each chunk's logits, vocabulary-major ([7, 4],
// then [7, 3]), give the loss, the input gradient's rows (inserted into dx)
// and the weight and bias gradients (accumulated in the loop's iter_args).
// No [11, 7] logits, and the weight is never transposed: only the chunk's
// rows are.
// CHECK-LABEL: func.func @loss
// CHECK-NOT: tensor<11x7xf32>
// CHECK-NOT: tensor<5x7xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c4 iter_args({{.*}}) -> (tensor<f32>, tensor<11x5xf32>, tensor<7x5xf32>, tensor<7xf32>)
// CHECK: %[[X:.*]] = tensor.extract_slice %{{.*}}[%{{.*}}, 0] [4, 5] [1, 1] : tensor<11x5xf32> to tensor<4x5xf32>
// CHECK: %[[XT:.*]] = linalg.transpose ins(%[[X]] : tensor<4x5xf32>) outs(%{{.*}} : tensor<5x4xf32>) permutation = [1, 0]
// CHECK: linalg.matmul ins(%{{.*}}, %[[XT]] : tensor<7x5xf32>, tensor<5x4xf32>) {{.*}} -> tensor<7x4xf32>
// CHECK: linalg.matmul indexing_maps{{.*}} ins(%[[DL:.*]], %{{.*}} : tensor<7x4xf32>, tensor<7x5xf32>) {{.*}} -> tensor<4x5xf32>
// CHECK: tensor.insert_slice {{.*}} into tensor<11x5xf32>
// CHECK: linalg.matmul ins(%[[DL]], %[[X]] : tensor<7x4xf32>, tensor<4x5xf32>) {{.*}} -> tensor<7x5xf32>
// CHECK: scf.yield
// CHECK: tensor.extract_slice %{{.*}}[8, 0] [3, 5] [1, 1] : tensor<11x5xf32> to tensor<3x5xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<7x3xf32>
// CHECK-NOT: tensor<11x7xf32>
// CHECK-NOT: tensor<5x7xf32>
// CHECK: return
// The loop bufferizes in place: one buffer per gradient, no copies of them
// (what bufferization leaves are self-copies that CSE and folding remove).
// BUF-LABEL: func.func @loss
// BUF: scf.for
// BUF-NOT: memref.copy
// BUF: return
func.func @loss(%h: tensor<11x5xf32>, %w: tensor<7x5xf32>, %b: tensor<7xf32>, %t: tensor<11xi32>) -> (tensor<f32>, tensor<11x5xf32>, tensor<7x5xf32>, tensor<7xf32>) {
  %l, %dh, %dw, %db = tg.linear_cross_entropy %h, %w, %t bias(%b : tensor<7xf32>) {chunk_rows = 4 : i64, ignore_index = -100 : i64} : tensor<11x5xf32>, tensor<7x5xf32>, tensor<11xi32> -> tensor<f32>, tensor<11x5xf32>, tensor<7x5xf32>, tensor<7xf32>
  return %l, %dh, %dw, %db : tensor<f32>, tensor<11x5xf32>, tensor<7x5xf32>, tensor<7xf32>
}

// One chunk holds every row: no loop.
// CHECK-LABEL: func.func @one_chunk
// CHECK-NOT: scf.for
// CHECK: linalg.matmul {{.*}} -> tensor<7x6xf32>
func.func @one_chunk(%h: tensor<2x3x5xf32>, %w: tensor<7x5xf32>, %t: tensor<2x3xi64>) -> tensor<f32> {
  %l, %dh, %dw = tg.linear_cross_entropy %h, %w, %t {chunk_rows = 64 : i64} : tensor<2x3x5xf32>, tensor<7x5xf32>, tensor<2x3xi64> -> tensor<f32>, tensor<2x3x5xf32>, tensor<7x5xf32>
  return %l : tensor<f32>
}

// With a soft cap c = 30 (Gemma 2's final_logit_softcapping) each chunk's
// logits are capped in place after the product; the exponentials get a
// tile of their own, so that the logits gradient can multiply by the cap's
// slope max(1 − (z / c)², 0) at the capped logit z.
// CHECK-LABEL: func.func @loss_softcap
// CHECK-DAG: %[[CAP:.*]] = arith.constant 3.000000e+01 : f32
// CHECK: %[[L:.*]] = linalg.matmul {{.*}} -> tensor<7x6xf32>
// CHECK: %[[Z:.*]] = linalg.generic {{.*}} outs(%[[L]] : tensor<7x6xf32>)
// CHECK: arith.divf %{{.*}}, %[[CAP]]
// CHECK-NEXT: math.tanh
// CHECK-NEXT: arith.mulf %{{.*}}, %[[CAP]]
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<7x6xf32>
// CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[Z]] : tensor<6xf32>, tensor<7x6xf32>) outs(%[[EMPTY]] : tensor<7x6xf32>)
// CHECK-NEXT: ^bb0(%[[MAX:.*]]: f32, %[[ZI:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[SHIFTED:.*]] = arith.subf %[[ZI]], %[[MAX]]
// CHECK-NEXT: math.exp %[[SHIFTED]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[Z]] : tensor<6xi32>, tensor<6xf32>, tensor<f32>, tensor<7x6xf32>) outs(%[[E]] : tensor<7x6xf32>)
// CHECK: arith.divf %{{.*}}, %[[CAP]]
// CHECK: arith.maximumf
// CHECK: arith.mulf
func.func @loss_softcap(%x: tensor<6x5xf32>, %w: tensor<7x5xf32>, %t: tensor<6xi32>) -> (tensor<f32>, tensor<6x5xf32>) {
  %l, %dx, %dw = tg.linear_cross_entropy %x, %w, %t {chunk_rows = 6 : i64, softcap = 3.0e+01 : f64} : tensor<6x5xf32>, tensor<7x5xf32>, tensor<6xi32> -> tensor<f32>, tensor<6x5xf32>, tensor<7x5xf32>
  return %l, %dx : tensor<f32>, tensor<6x5xf32>
}

// Gradients nothing reads are not computed. A frozen weight and bias (their
// gradients unused): the loop carries the loss and dx only, with no
// dlogitsᵀ · x product and no bias sum.
// CHECK-LABEL: func.func @frozen_head
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c4 iter_args({{.*}}) -> (tensor<f32>, tensor<11x5xf32>)
// CHECK: linalg.matmul {{.*}} -> tensor<7x4xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<4x5xf32>
// CHECK-NOT: -> tensor<7x5xf32>
// CHECK-NOT: -> tensor<7xf32>
// CHECK: return
func.func @frozen_head(%h: tensor<11x5xf32>, %w: tensor<7x5xf32>, %b: tensor<7xf32>, %t: tensor<11xi32>) -> (tensor<f32>, tensor<11x5xf32>) {
  %l, %dh, %dw, %db = tg.linear_cross_entropy %h, %w, %t bias(%b : tensor<7xf32>) {chunk_rows = 4 : i64} : tensor<11x5xf32>, tensor<7x5xf32>, tensor<11xi32> -> tensor<f32>, tensor<11x5xf32>, tensor<7x5xf32>, tensor<7xf32>
  return %l, %dh : tensor<f32>, tensor<11x5xf32>
}

// Nothing below the head trains (dx unused): the loss and dW only, no
// dlogits · W product.
// CHECK-LABEL: func.func @only_head_trains
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c4 iter_args({{.*}}) -> (tensor<f32>, tensor<7x5xf32>)
// CHECK-NOT: -> tensor<4x5xf32>
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.matmul {{.*}} -> tensor<7x5xf32>
// CHECK-NOT: -> tensor<3x5xf32>
// CHECK: return
func.func @only_head_trains(%h: tensor<11x5xf32>, %w: tensor<7x5xf32>, %t: tensor<11xi32>) -> (tensor<f32>, tensor<7x5xf32>) {
  %l, %dh, %dw = tg.linear_cross_entropy %h, %w, %t {chunk_rows = 4 : i64} : tensor<11x5xf32>, tensor<7x5xf32>, tensor<11xi32> -> tensor<f32>, tensor<11x5xf32>, tensor<7x5xf32>
  return %l, %dw : tensor<f32>, tensor<7x5xf32>
}
