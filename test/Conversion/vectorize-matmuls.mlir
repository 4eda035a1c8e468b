// tgc-vectorize-matmuls: full tiles, FMAs, for plain, transposed-A and
// transposed-B matmuls, in every function of the module; a matmul whose N
// is not a multiple of 8 stays for the scalar loops.
// RUN: tgc-opt %s --tgc-vectorize-matmuls --canonicalize --cse | FileCheck %s

// CHECK-LABEL: func.func @plain
// CHECK: scf.for
// CHECK: vector.fma {{.*}} : vector<32xf32>
// CHECK-NOT: linalg.matmul
func.func @plain(%a: memref<64x256xf32>, %b: memref<256x128xf32>, %c: memref<64x128xf32>) {
  linalg.matmul ins(%a, %b : memref<64x256xf32>, memref<256x128xf32>) outs(%c : memref<64x128xf32>)
  return
}

// CHECK-LABEL: func.func @transposed_b
// CHECK: vector.fma
// CHECK-NOT: linalg.matmul
func.func @transposed_b(%a: memref<64x256xf32>, %b: memref<128x256xf32>, %c: memref<64x128xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<64x256xf32>, memref<128x256xf32>) outs(%c : memref<64x128xf32>)
  return
}

// CHECK-LABEL: func.func @transposed_a
// CHECK: vector.fma
// CHECK-NOT: linalg.matmul
func.func @transposed_a(%a: memref<256x64xf32>, %b: memref<256x128xf32>, %c: memref<64x128xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<256x64xf32>, memref<256x128xf32>) outs(%c : memref<64x128xf32>)
  return
}

// CHECK-LABEL: func.func @narrow
// CHECK: linalg.matmul
func.func @narrow(%a: memref<64x256xf32>, %b: memref<256x10xf32>, %c: memref<64x10xf32>) {
  linalg.matmul ins(%a, %b : memref<64x256xf32>, memref<256x10xf32>) outs(%c : memref<64x10xf32>)
  return
}
