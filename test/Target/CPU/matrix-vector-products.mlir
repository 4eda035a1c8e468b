// Products of at most 4 rows whose right-hand operand is a transposed copy
// of W read W where it is stored (readTransposedOperandsInPlace): a
// linalg.generic over (n, m, k), no transpose, no copy. Narrow operands of
// one type are widened as they are read (generation's bf16 weights). Five
// rows, or operands of two types, keep the copies and the tiled product.
// RUN: tgc-opt %s --tgc-vectorize-matmuls="vector-bits=256 vector-registers=16" --canonicalize | FileCheck %s

// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[Y:.*]] = affine_map<(d0, d1, d2) -> (d1, d0)>

// CHECK-LABEL: func.func @f32_row
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[Y]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : memref<1x96xf32>, memref<80x96xf32>) outs(%arg2 : memref<1x80xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: arith.addf %[[C]], %[[P]] : f32
// CHECK: return
func.func @f32_row(%x: memref<1x96xf32>, %w: memref<80x96xf32>, %y: memref<1x80xf32>) {
  %t = memref.alloc() : memref<96x80xf32>
  linalg.transpose ins(%w : memref<80x96xf32>) outs(%t : memref<96x80xf32>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<1x96xf32>, memref<96x80xf32>) outs(%y : memref<1x80xf32>)
  memref.dealloc %t : memref<96x80xf32>
  return
}

// CHECK-LABEL: func.func @bf16_rows
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : memref<4x96xbf16>, memref<80x96xbf16>) outs(%arg2 : memref<4x80xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %[[C:.*]]: f32):
// CHECK-NEXT: %[[WA:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-NEXT: %[[WB:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[WA]], %[[WB]] : f32
// CHECK-NEXT: arith.addf %[[C]], %[[P]] : f32
// CHECK: return
func.func @bf16_rows(%x: memref<4x96xbf16>, %w: memref<80x96xbf16>, %y: memref<4x80xf32>) {
  %t = memref.alloc() : memref<96x80xbf16>
  linalg.transpose ins(%w : memref<80x96xbf16>) outs(%t : memref<96x80xbf16>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<4x96xbf16>, memref<96x80xbf16>) outs(%y : memref<4x80xf32>)
  memref.dealloc %t : memref<96x80xbf16>
  return
}

// CHECK-LABEL: func.func @bf16_five_rows
// CHECK: linalg.transpose
// CHECK: vector.fma
// CHECK: return
func.func @bf16_five_rows(%x: memref<5x96xbf16>, %w: memref<80x96xbf16>, %y: memref<5x80xf32>) {
  %t = memref.alloc() : memref<96x80xbf16>
  linalg.transpose ins(%w : memref<80x96xbf16>) outs(%t : memref<96x80xbf16>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<5x96xbf16>, memref<96x80xbf16>) outs(%y : memref<5x80xf32>)
  memref.dealloc %t : memref<96x80xbf16>
  return
}

// CHECK-LABEL: func.func @mixed_operands
// CHECK: linalg.transpose
// CHECK: return
func.func @mixed_operands(%x: memref<1x96xf32>, %w: memref<80x96xbf16>, %y: memref<1x80xf32>) {
  %t = memref.alloc() : memref<96x80xbf16>
  linalg.transpose ins(%w : memref<80x96xbf16>) outs(%t : memref<96x80xbf16>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<1x96xf32>, memref<96x80xbf16>) outs(%y : memref<1x80xf32>)
  memref.dealloc %t : memref<96x80xbf16>
  return
}
