// RUN: tgc-opt %s --tgc-gpu-prepare-kernels | FileCheck %s

// CHECK-DAG: #[[TRANSPOSED:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[FIRST:.+]] = affine_map<(d0, d1) -> (d0)>

// A copy becomes a linalg op (one kernel), not a host memcpy.
// CHECK-LABEL: func.func @copy
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%arg0 : memref<4x5xf32>) outs(%arg1 : memref<4x5xf32>)
func.func @copy(%a: memref<4x5xf32>, %b: memref<4x5xf32>) {
  memref.copy %a, %b : memref<4x5xf32> to memref<4x5xf32>
  return
}

// A column sum iterates the reduction first: interchanged, so that its
// parallel dimension becomes the kernel's threads.
// CHECK-LABEL: func.func @column_sum
// CHECK: linalg.generic {indexing_maps = [#[[TRANSPOSED]], #[[FIRST]]], iterator_types = ["parallel", "reduction"]}
#identity = affine_map<(d0, d1) -> (d0, d1)>
#column = affine_map<(d0, d1) -> (d1)>
func.func @column_sum(%a: memref<7x5xf32>, %b: memref<5xf32>) {
  linalg.generic {indexing_maps = [#identity, #column],
                  iterator_types = ["reduction", "parallel"]}
      ins(%a : memref<7x5xf32>) outs(%b : memref<5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// A named op with a leading reduction is generalised first.
// CHECK-LABEL: func.func @reduce_rows
// CHECK-NOT: linalg.reduce
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
func.func @reduce_rows(%a: memref<7x5xf32>, %b: memref<5xf32>) {
  linalg.reduce ins(%a : memref<7x5xf32>) outs(%b : memref<5xf32>) dimensions = [0]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  return
}

// Ops whose parallel dimensions already come first are left alone.
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.matmul
func.func @matmul(%a: memref<3x4xf32>, %b: memref<4x5xf32>, %c: memref<3x5xf32>) {
  linalg.matmul ins(%a, %b : memref<3x4xf32>, memref<4x5xf32>) outs(%c : memref<3x5xf32>)
  return
}
