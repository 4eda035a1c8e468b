// tgc-vectorize-transposes: a static f32 matrix's whole 16 x 16 blocks are
// read by rows, transposed in registers (shuffles) and written by rows, one
// strip of sixteen source rows per parallel iteration; the columns and rows
// past the last whole block stay linalg.transposes of subviews. The same
// for a bf16/f16 matrix widened to f32 while it is transposed (each block
// widened as it is read; the edges stay that generic on subviews). Narrower
// matrices, other element types and other permutations are left alone.
// RUN: tgc-opt %s --tgc-vectorize-transposes --canonicalize | FileCheck %s

// 37 x 50: two strips of rows, three blocks of columns; edges of 2 columns
// (of the 32 whole rows) and 5 rows (of all 50 columns).
// CHECK-LABEL: func.func @awkward
// CHECK-SAME: (%[[W:.*]]: memref<37x50xf32>, %[[T:.*]]: memref<50x37xf32>)
// CHECK-DAG: %[[C48:.*]] = arith.constant 48 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: scf.forall (%[[S:.*]]) in (2) {
// CHECK: %[[ROW:.*]] = arith.muli %[[S]], %[[C16]] : index
// CHECK: scf.for %[[COL:.*]] = %{{.*}} to %[[C48]] step %[[C16]] {
// CHECK: %[[B:.*]] = vector.transfer_read %[[W]][%[[ROW]], %[[COL]]], %{{.*}} {in_bounds = [true, true]} : memref<37x50xf32>, vector<16x16xf32>
// CHECK-NOT: vector.transpose
// CHECK: vector.shuffle
// CHECK: vector.transfer_write %{{.*}}, %[[T]][%[[COL]], %[[ROW]]] {in_bounds = [true, true]} : vector<16x16xf32>, memref<50x37xf32>
// CHECK: %[[RC:.*]] = memref.subview %[[W]][0, 48] [32, 2] [1, 1]
// CHECK: %[[TC:.*]] = memref.subview %[[T]][48, 0] [2, 32] [1, 1]
// CHECK: linalg.transpose ins(%[[RC]] : {{.*}}) outs(%[[TC]] : {{.*}}) permutation = [1, 0]
// CHECK: %[[RR:.*]] = memref.subview %[[W]][32, 0] [5, 50] [1, 1]
// CHECK: %[[TR:.*]] = memref.subview %[[T]][0, 32] [50, 5] [1, 1]
// CHECK: linalg.transpose ins(%[[RR]] : {{.*}}) outs(%[[TR]] : {{.*}}) permutation = [1, 0]
func.func @awkward(%w: memref<37x50xf32>, %t: memref<50x37xf32>) {
  linalg.transpose ins(%w : memref<37x50xf32>) outs(%t : memref<50x37xf32>) permutation = [1, 0]
  return
}

// Whole blocks only: no edges.
// CHECK-LABEL: func.func @whole
// CHECK: scf.forall (%{{.*}}) in (4) {
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @whole(%w: memref<64x32xf32>, %t: memref<32x64xf32>) {
  linalg.transpose ins(%w : memref<64x32xf32>) outs(%t : memref<32x64xf32>) permutation = [1, 0]
  return
}

// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: scf.forall
// CHECK-COUNT-3: linalg.transpose
// CHECK: return
func.func @left_alone(%a: memref<15x64xf32>, %at: memref<64x15xf32>,
                      %b: memref<32x32xbf16>, %bt: memref<32x32xbf16>,
                      %c: memref<2x16x16xf32>, %ct: memref<16x2x16xf32>) {
  linalg.transpose ins(%a : memref<15x64xf32>) outs(%at : memref<64x15xf32>) permutation = [1, 0]
  linalg.transpose ins(%b : memref<32x32xbf16>) outs(%bt : memref<32x32xbf16>) permutation = [1, 0]
  linalg.transpose ins(%c : memref<2x16x16xf32>) outs(%ct : memref<16x2x16xf32>) permutation = [1, 0, 2]
  return
}

// A bf16 matrix widened into an f32 one as it is transposed.
// CHECK-LABEL: func.func @widened
// CHECK-SAME: (%[[W:.*]]: memref<37x50xbf16>, %[[T:.*]]: memref<50x37xf32>)
// CHECK: scf.forall (%[[S:.*]]) in (2) {
// CHECK: %[[B:.*]] = vector.transfer_read %[[W]][%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true, true]} : memref<37x50xbf16>, vector<16x16xbf16>
// CHECK: arith.extf %[[B]] : vector<16x16xbf16> to vector<16x16xf32>
// CHECK: vector.shuffle
// CHECK: vector.transfer_write %{{.*}}, %[[T]][%{{.*}}, %{{.*}}] {in_bounds = [true, true]} : vector<16x16xf32>, memref<50x37xf32>
// CHECK: %[[RC:.*]] = memref.subview %[[W]][0, 48] [32, 2] [1, 1]
// CHECK: %[[TC:.*]] = memref.subview %[[T]][48, 0] [2, 32] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[RC]] : {{.*}}) outs(%[[TC]] : {{.*}})
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[RR:.*]] = memref.subview %[[W]][32, 0] [5, 50] [1, 1]
// CHECK: %[[TR:.*]] = memref.subview %[[T]][0, 32] [50, 5] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[RR]] : {{.*}}) outs(%[[TR]] : {{.*}})
// CHECK-NOT: linalg.generic
// CHECK: return
#swap = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @widened(%w: memref<37x50xbf16>, %t: memref<50x37xf32>) {
  linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel"]} ins(%w : memref<37x50xbf16>) outs(%t : memref<50x37xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  }
  return
}

// Not a widening transpose: the identity map, or more than a widening.
// CHECK-LABEL: func.func @widened_left_alone
// CHECK-NOT: scf.forall
// CHECK-COUNT-2: linalg.generic
// CHECK: return
func.func @widened_left_alone(%w: memref<32x32xbf16>, %t: memref<32x32xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : memref<32x32xbf16>) outs(%t : memref<32x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  }
  linalg.generic {indexing_maps = [#swap, #id], iterator_types = ["parallel", "parallel"]} ins(%w : memref<32x32xbf16>) outs(%t : memref<32x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  }
  return
}
