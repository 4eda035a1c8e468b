// The op that combines a reduction's accumulator with the next value gets
// `reassoc` (LLVM may then sum in vector lanes); the rest of the body, and
// ops of loops without a reduction, keep strict semantics.
// RUN: tgc-opt %s --tgc-reassociate-reductions | FileCheck %s

// A row sum of squares (RMSNorm): the square stays strict, the sum is
// reassociable; existing flags are kept.
// CHECK-LABEL: func.func @row_sum_of_squares
// CHECK: %[[SQ:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %{{.*}}, %[[SQ]] fastmath<reassoc> : f32
// CHECK-NEXT: linalg.yield %[[SUM]]
// CHECK: arith.maximumf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
func.func @row_sum_of_squares(%x: memref<8x256xf32>, %sum: memref<8xf32>, %max: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x256xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x256xf32>) outs(%max : memref<8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %v, %acc fastmath<contract> : f32
    linalg.yield %m : f32
  }
  return
}

// No reduction loop: an elementwise add that reads its output is left alone;
// so is a reduction whose yielded value does not combine the accumulator.
// CHECK-LABEL: func.func @not_reductions
// CHECK-NOT: reassoc
// CHECK: return
func.func @not_reductions(%x: memref<256xf32>, %y: memref<256xf32>, %last: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x : memref<256xf32>) outs(%y : memref<256xf32>) {
  ^bb0(%v: f32, %out: f32):
    %s = arith.addf %out, %v : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>],
                  iterator_types = ["reduction"]}
      ins(%x : memref<256xf32>) outs(%last : memref<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %d = arith.addf %v, %v : f32
    linalg.yield %d : f32
  }
  return
}
