// RUN: tgc-opt %s --split-input-file --tgc-gpu-block-reductions | FileCheck %s
// RUN: tgc-opt %s --split-input-file --tgc-gpu-block-reductions --tgc-gpu-lower-block-programs | FileCheck %s --check-prefix=GPU

// Row sums over 300 elements: one block per row, 256 threads each summing a
// strided share into shared memory, eight halving phases, then thread 0
// adds the row's total to the output.
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%c7, %c1{{.*}}, %c1{{.*}})
// CHECK: %[[PARTIAL:.+]] = memref.alloca() {tgc.gpu.shared} : memref<256xf32>
// CHECK: scf.parallel (%[[T:.+]]) =
// CHECK: scf.for %[[R:.+]] = %[[T]] to %c300 step %c256 iter_args(%[[ACC:.+]] = %cst)
// CHECK: %[[X:.+]] = memref.load %arg0[%{{.+}}, %[[R]]]
// CHECK: arith.addf %[[ACC]], %[[X]]
// CHECK: memref.store %{{.+}}, %[[PARTIAL]][%[[T]]]
// CHECK-COUNT-8: } {tgc.gpu.phase}
// CHECK: arith.cmpi ult, %{{.+}}, %c1
// CHECK: memref.load %arg1
// CHECK: memref.store %{{.+}}, %arg1
// CHECK: } {tgc.gpu.phase}
// CHECK: } {tgc.gpu.block_program}
// CHECK-NOT: linalg.generic
// GPU-LABEL: func.func @row_sum
// GPU: gpu.launch {{.*}} workgroup(%{{[a-z0-9]+}} : memref<256xf32, #gpu.address_space<workgroup>>)
// GPU-COUNT-10: gpu.barrier
// GPU-NOT: gpu.barrier
// GPU: gpu.terminator
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
func.func @row_sum(%a: memref<7x300xf32>, %out: memref<7xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<7x300xf32>) outs(%out : memref<7xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A row max of exp(x) over 100 elements: 128 threads, starting from -inf;
// the element's computation is cloned into the strided loop.
// CHECK-LABEL: func.func @row_max
// CHECK: %[[NEG_INF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: memref.alloca() {tgc.gpu.shared} : memref<128xf32>
// CHECK: scf.for {{.*}} to %c100 step %c128 iter_args(%{{.+}} = %[[NEG_INF]])
// CHECK: math.exp
// CHECK: arith.maximumf
func.func @row_max(%a: memref<3x100xf32>, %out: memref<3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<3x100xf32>) outs(%out : memref<3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %e = math.exp %x : f32
    %m = arith.maximumf %e, %acc : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A sum of squares over a whole 2-d tensor (the gradient norm): one block,
// the two reduction dimensions walked as one.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%c1{{.*}}, %c1{{.*}}, %c1{{.*}})
// CHECK: scf.for %[[R:.+]] = {{.*}} to %c1200 step %c256
// CHECK: %[[J:.+]] = arith.remui %[[R]], %c40
// CHECK: %[[I:.+]] = arith.divui %[[R]], %c40
// CHECK: memref.load %arg0[%[[I]], %[[J]]]
func.func @sum_of_squares(%a: memref<30x40xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%a : memref<30x40xf32>) outs(%out : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left alone: a reduction too small for a block, and one whose running
// value is used other than by the combination.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: tgc.gpu
func.func @left_alone(%a: memref<3x16xf32>, %b: memref<3x100xf32>, %out: memref<3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<3x16xf32>) outs(%out : memref<3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%b : memref<3x100xf32>) outs(%out : memref<3xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %d = arith.mulf %acc, %x : f32
    %s = arith.addf %acc, %d : f32
    linalg.yield %s : f32
  }
  return
}
