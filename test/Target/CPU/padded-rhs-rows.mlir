// RUN: tgc-opt %s --tgc-vectorize-matmuls="vector-bits=256 vector-registers=16" --canonicalize --cse | FileCheck %s

// B rows 512 floats (2 KiB) apart would put a register tile's whole K
// panel into two of the 64 L1 sets: B is first copied into rows one cache
// line (16 floats) longer, and the product reads that copy.
// CHECK-LABEL: func.func @conflicting
// CHECK: %[[PADDED:.*]] = memref.alloc() {{.*}}: memref<96x528xf32>
// CHECK: %[[VIEW:.*]] = memref.subview %[[PADDED]][0, 0] [96, 512] [1, 1]
// CHECK: linalg.copy ins(%{{.*}} : memref<96x512xf32>) outs(%[[VIEW]] : memref<96x512xf32, strided<[528, 1]>>)
// CHECK: vector.fma
func.func @conflicting(%a: memref<64x96xf32>, %b: memref<96x512xf32>, %c: memref<64x512xf32>) {
  linalg.matmul ins(%a, %b : memref<64x96xf32>, memref<96x512xf32>) outs(%c : memref<64x512xf32>)
  return
}

// Rows 1376 floats apart spread over the sets: B is read where it is.
// CHECK-LABEL: func.func @spread
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.copy
// CHECK: vector.fma
func.func @spread(%a: memref<64x96xf32>, %b: memref<96x1376xf32>, %c: memref<64x1376xf32>) {
  linalg.matmul ins(%a, %b : memref<64x96xf32>, memref<96x1376xf32>) outs(%c : memref<64x1376xf32>)
  return
}
