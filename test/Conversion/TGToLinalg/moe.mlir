// The mixture-of-experts ops lower to scalar loops (routing, the counting
// sort, the counts) and, for the grouped products, to one loop over the
// experts around linalg.matmul of static shape: the expert's matrix is
// chosen by an scf.index_switch, its rows visited in chunks as the target
// chose them (#tg.row_chunks; the CPU's 256 rows, then chunks of 32 rows
// zero-padded past the expert's segment). However many experts, a grouped
// product is two matmuls.
// RUN: tgc-opt %s --tgc-cpu-choose-tiles --convert-tg-to-linalg | FileCheck %s
// RUN: tgc-opt %s --tgc-cpu-choose-tiles="expert-chunk-rows=64 expert-tail-rows=8" --convert-tg-to-linalg | FileCheck %s --check-prefix=SMALL
// Without a choice: one zero-padded chunk of all 600 rows per expert.
// RUN: tgc-opt %s --convert-tg-to-linalg | FileCheck %s --check-prefix=WHOLE
// RUN: not tgc-opt %s --tgc-cpu-choose-tiles="expert-chunk-rows=8 expert-tail-rows=64" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: tgc-cpu-choose-tiles: expert chunks need 1 <= expert-tail-rows <= expert-chunk-rows, got 64 and 8

// SMALL-LABEL: func.func @grouped(
// SMALL: linalg.matmul {{.*}} -> tensor<64x40xf32>
// SMALL: linalg.matmul {{.*}} -> tensor<8x40xf32>
// WHOLE-LABEL: func.func @grouped(
// WHOLE-NOT: tensor<256x
// WHOLE: linalg.matmul {{.*}} -> tensor<600x40xf32>
// WHOLE-NOT: tensor<32x
// WHOLE: return

// CHECK-LABEL: func.func @route
// CHECK: linalg.generic
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.cmpf olt
// CHECK: tensor.insert
// CHECK-NOT: tg.
func.func @route(%l: tensor<13x5xf32>) -> (tensor<13x2xf32>, tensor<13x2xi32>) {
  %w, %e = tg.route %l {top_k = 2 : i64, normalize} : tensor<13x5xf32> -> tensor<13x2xf32>, tensor<13x2xi32>
  return %w, %e : tensor<13x2xf32>, tensor<13x2xi32>
}

// CHECK-LABEL: func.func @dispatch
// CHECK-COUNT-3: scf.for
// CHECK-NOT: tg.
func.func @dispatch(%e: tensor<13x2xi32>) -> (tensor<26xi32>, tensor<13x2xi32>, tensor<6xi32>) {
  %r, %p, %o = tg.expert_dispatch %e {num_experts = 5 : i64} : tensor<13x2xi32> -> tensor<26xi32>, tensor<13x2xi32>, tensor<6xi32>
  return %r, %p, %o : tensor<26xi32>, tensor<13x2xi32>, tensor<6xi32>
}

// Two experts: one loop over them, the matrix switched by expert, then a
// loop of full chunks and a loop of padded ones.
// CHECK-LABEL: func.func @grouped
// CHECK: %[[E:.*]] = arith.constant 2 : index
// CHECK: scf.for %[[X:.*]] = %{{.*}} to %[[E]]
// CHECK: %[[W:.*]] = scf.index_switch %[[X]] -> tensor<40x24xf32>
// CHECK: case 0 {
// CHECK-NEXT: scf.yield %arg2
// CHECK: default {
// CHECK-NEXT: scf.yield %arg3
// CHECK: linalg.transpose ins(%[[W]]
// CHECK: scf.for
// CHECK: tensor.extract_slice {{.*}} : tensor<600x24xf32> to tensor<256x24xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<256x40xf32>
// CHECK: scf.for
// CHECK: tensor.extract_slice {{.*}} : tensor<600x24xf32> to tensor<?x24xf32>
// CHECK: tensor.insert_slice {{.*}} into tensor<32x24xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<32x40xf32>
// CHECK-NOT: linalg.matmul
// CHECK-NOT: tg.
// CHECK: return
func.func @grouped(%x: tensor<600x24xf32>, %o: tensor<3xi32>, %w0: tensor<40x24xf32>, %w1: tensor<40x24xf32>) -> tensor<600x40xf32> {
  %y = tg.grouped_matmul %x, %o, %w0, %w1 {transpose_weights} : tensor<600x24xf32>, tensor<3xi32>, tensor<40x24xf32>, tensor<40x24xf32> -> tensor<600x40xf32>
  return %y : tensor<600x40xf32>
}

// Weight gradients sum each chunk's product into the expert's slice of one
// [E, P, Q] tensor; the results are its slices.
// CHECK-LABEL: func.func @weight_grad
// CHECK: linalg.fill {{.*}} -> tensor<2x40x24xf32>
// CHECK: scf.for %[[X:.*]] = {{.*}} iter_args(%[[S:.*]] = {{.*}}) -> (tensor<2x40x24xf32>)
// CHECK: tensor.extract_slice %[[S]][%[[X]], 0, 0] [1, 40, 24] [1, 1, 1] : tensor<2x40x24xf32> to tensor<40x24xf32>
// CHECK: scf.for {{.*}} iter_args
// CHECK: linalg.matmul {{.*}} ins({{.*}} : tensor<256x40xf32>, tensor<256x24xf32>) outs({{.*}} : tensor<40x24xf32>)
// CHECK: scf.for {{.*}} iter_args
// CHECK: linalg.matmul {{.*}} ins({{.*}} : tensor<32x40xf32>, tensor<32x24xf32>) outs({{.*}} : tensor<40x24xf32>)
// CHECK: tensor.insert_slice {{.*}} into %[[S]][%[[X]], 0, 0] [1, 40, 24] [1, 1, 1]
// CHECK-NOT: linalg.matmul
// CHECK: %[[D0:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0] [1, 40, 24]
// CHECK: %[[D1:.*]] = tensor.extract_slice %{{.*}}[1, 0, 0] [1, 40, 24]
// CHECK-NOT: tg.
// CHECK: return %[[D0]], %[[D1]]
func.func @weight_grad(%dy: tensor<600x40xf32>, %x: tensor<600x24xf32>, %o: tensor<3xi32>) -> (tensor<40x24xf32>, tensor<40x24xf32>) {
  %d:2 = tg.grouped_weight_grad %dy, %x, %o : tensor<600x40xf32>, tensor<600x24xf32>, tensor<3xi32> -> tensor<40x24xf32>, tensor<40x24xf32>
  return %d#0, %d#1 : tensor<40x24xf32>, tensor<40x24xf32>
}
