// tgc-parallelize-loops: large ops with a parallel outer loop become an
// scf.forall of chunks; small ops, reductions over the outer loop and
// matmuls stay as they are.
// RUN: tgc-opt %s --tgc-parallelize-loops | FileCheck %s
// RUN: tgc-opt %s --tgc-parallelize-loops="min-chunk-work=1024 max-chunks=4" | FileCheck %s --check-prefix=SMALL
// RUN: not tgc-opt %s --tgc-parallelize-loops="max-chunks=1" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: tgc-parallelize-loops: min-chunk-work must be >= 1 and max-chunks >= 2

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// 1024 x 512 = 512K iterations: 16 chunks of 64 rows (4 of 256 with max-chunks=4).
// CHECK-LABEL: func.func @large_elementwise
// CHECK: scf.forall (%{{.*}}) = (0) to (1024) step (64)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<64x512xf32, strided<[512, 1], offset: ?>>)
// SMALL-LABEL: func.func @large_elementwise
// SMALL: scf.forall (%{{.*}}) = (0) to (1024) step (256)
func.func @large_elementwise(%a: memref<1024x512xf32>, %b: memref<1024x512xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<1024x512xf32>) outs(%b : memref<1024x512xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}

// A row reduction (softmax's max, a norm's sum) is chunked by rows too.
// CHECK-LABEL: func.func @row_reduction
// CHECK: scf.forall
// CHECK: iterator_types = ["parallel", "reduction"]
func.func @row_reduction(%a: memref<1024x512xf32>, %b: memref<1024xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<1024x512xf32>) outs(%b : memref<1024xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// 64 x 64 = 4K iterations: a fork and join would cost more.
// CHECK-LABEL: func.func @small
// CHECK-NOT: scf.forall
// SMALL-LABEL: func.func @small
// SMALL: scf.forall (%{{.*}}) = (0) to (64) step (16)
func.func @small(%a: memref<64x64xf32>, %b: memref<64x64xf32>) {
  linalg.copy ins(%a : memref<64x64xf32>) outs(%b : memref<64x64xf32>)
  return
}

// The outer loop is the reduction (a bias gradient summed over rows): left
// sequential, chunks would race on the output.
// CHECK-LABEL: func.func @outer_reduction
// CHECK-NOT: scf.forall
#col = affine_map<(d0, d1) -> (d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
func.func @outer_reduction(%a: memref<512x1024xf32>, %b: memref<512xf32>) {
  linalg.generic {indexing_maps = [#t, #col], iterator_types = ["reduction", "parallel"]}
      ins(%a : memref<512x1024xf32>) outs(%b : memref<512xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// Matmuls belong to tgc-vectorize-matmuls.
// CHECK-LABEL: func.func @matmul
// CHECK-NOT: scf.forall
// CHECK: linalg.matmul
func.func @matmul(%a: memref<512x512xf32>, %b: memref<512x512xf32>, %c: memref<512x512xf32>) {
  linalg.matmul ins(%a, %b : memref<512x512xf32>, memref<512x512xf32>) outs(%c : memref<512x512xf32>)
  return
}
