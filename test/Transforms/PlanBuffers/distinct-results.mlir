// RUN: tgc-opt %s --tgc-distinct-results --split-input-file | FileCheck %s
// RUN: tgc-opt %s --tgc-distinct-results --buffer-results-to-out-params="hoist-static-allocs modify-public-functions" --split-input-file | FileCheck %s --check-prefix=OUT

// One buffer returned three times (two parameters' equal gradients): the
// first return keeps it, each repeat returns a copy.
// CHECK-LABEL: func.func @twice
// CHECK: %[[A:.*]] = memref.alloc() : memref<80xf32>
// CHECK: %[[C1:.*]] = memref.alloc() : memref<80xf32>
// CHECK-NEXT: memref.copy %[[A]], %[[C1]]
// CHECK-NEXT: %[[C2:.*]] = memref.alloc() : memref<80xf32>
// CHECK-NEXT: memref.copy %[[A]], %[[C2]]
// CHECK-NEXT: return %[[A]], %[[B:.*]], %[[C1]], %[[C2]]
// Then each out-parameter is written: the allocation becomes the first,
// the copies fill the others.
// OUT-LABEL: func.func @twice
// OUT-SAME: (%{{.*}}: memref<80xf32>, %[[O0:.*]]: memref<80xf32>, %[[O1:.*]]: memref<4xf32>, %[[O2:.*]]: memref<80xf32>, %[[O3:.*]]: memref<80xf32>)
// OUT: linalg.fill {{.*}} outs(%[[O0]]
// OUT: memref.copy %[[O0]], %[[O2]]
// OUT: memref.copy %[[O0]], %[[O3]]
// OUT-NEXT: return
func.func @twice(%x: memref<80xf32>) -> (memref<80xf32>, memref<4xf32>, memref<80xf32>, memref<80xf32>) {
  %c = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<80xf32>
  linalg.fill ins(%c : f32) outs(%a : memref<80xf32>)
  %b = memref.alloc() : memref<4xf32>
  linalg.fill ins(%c : f32) outs(%b : memref<4xf32>)
  return %a, %b, %a, %a : memref<80xf32>, memref<4xf32>, memref<80xf32>, memref<80xf32>
}

// -----

// Distinct buffers and tensors are left alone.
// CHECK-LABEL: func.func @distinct
// CHECK-NOT: memref.copy
// CHECK: return %arg0, %arg1
func.func @distinct(%x: memref<3xf32>, %y: memref<3xf32>) -> (memref<3xf32>, memref<3xf32>) {
  return %x, %y : memref<3xf32>, memref<3xf32>
}
