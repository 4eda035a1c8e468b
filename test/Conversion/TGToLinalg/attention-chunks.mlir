// RUN: tgc-opt %s --convert-tg-to-linalg="attention-chunk-bytes=12800" --canonicalize | FileCheck %s
// RUN: tgc-opt %s --convert-tg-to-linalg --canonicalize | FileCheck %s --check-prefix=WHOLE

// 2 query heads share 1 key/value head: 2 x 50 = 100 stacked query rows of
// 50 keys (200 bytes of scores each). 12800 bytes is 64 rows: two balanced
// chunks of 50, the loop's induction variable offsetting the causal mask.
// CHECK-LABEL: func.func @attention
// CHECK-NOT: tensor<1x100x50xf32>
// CHECK: scf.for %[[ROW:.*]] = %c0 to %c100 step %c50
// CHECK: tensor.extract_slice %{{.*}}[0, %[[ROW]], 0] [1, 50, 4]
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x50x50xf32>
// CHECK: arith.addi %{{.*}}, %[[ROW]] : index
// CHECK: tensor.insert_slice
// CHECK-NOT: tensor<1x100x50xf32>
// CHECK: return
// WHOLE-LABEL: func.func @attention
// WHOLE-NOT: scf.for
// WHOLE: linalg.batch_matmul {{.*}} -> tensor<1x100x50xf32>
func.func @attention(%q: tensor<1x50x2x4xf32>, %k: tensor<1x50x1x4xf32>, %v: tensor<1x50x1x4xf32>) -> tensor<1x50x2x4xf32> {
  %o = tg.attention %q, %k, %v {causal} : tensor<1x50x2x4xf32>, tensor<1x50x1x4xf32>, tensor<1x50x1x4xf32> -> tensor<1x50x2x4xf32>
  return %o : tensor<1x50x2x4xf32>
}

// The gradient: dQ's rows written per chunk, dK and dV accumulated.
// CHECK-LABEL: func.func @grad
// CHECK-NOT: tensor<1x100x50xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (tensor<1x100x4xf32>, tensor<1x50x4xf32>, tensor<1x50x4xf32>)
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x50x50xf32>
// CHECK: scf.yield
// CHECK-NOT: tensor<1x100x50xf32>
func.func @grad(%g: tensor<1x50x2x4xf32>, %q: tensor<1x50x2x4xf32>, %k: tensor<1x50x1x4xf32>, %v: tensor<1x50x1x4xf32>, %o: tensor<1x50x2x4xf32>) -> (tensor<1x50x2x4xf32>, tensor<1x50x1x4xf32>, tensor<1x50x1x4xf32>) {
  %dq, %dk, %dv = tg.attention_grad %g, %q, %k, %v, %o {causal} : tensor<1x50x2x4xf32>, tensor<1x50x1x4xf32>, tensor<1x50x1x4xf32>
  return %dq, %dk, %dv : tensor<1x50x2x4xf32>, tensor<1x50x1x4xf32>, tensor<1x50x1x4xf32>
}
