// RUN: tgc-opt %s --tgc-cpu-choose-tiles="score-tile-bytes=8192 task-bytes=0" --convert-tg-to-linalg --canonicalize | FileCheck %s
// RUN: tgc-opt %s --convert-tg-to-linalg --canonicalize | FileCheck %s --check-prefix=WHOLE
// RUN: tgc-opt %s --tgc-cpu-choose-tiles="task-bytes=8192" --convert-tg-to-linalg --canonicalize | FileCheck %s --check-prefix=TASKS

// FlashAttention tiles: S = 100 positions, G = 2 query heads per key/value
// head, f32 scores: a budget of 8192 bytes gives T = 32 positions per tile
// (T·G·T·4 bytes): query tiles of 64 rows against key tiles of 32 keys.
// Three full query tiles (an scf.for) and a remainder of 4 positions. Causal: each query tile visits the key tiles left of the
// diagonal (an scf.for up to its own offset), unmasked, then the diagonal
// tile, the only one with the mask (a compare of key and row position).
// Never a score tensor over the whole sequence.

// CHECK-LABEL: func.func @attention
// CHECK-NOT: tensor<1x200x100xf32>
// CHECK: scf.for %[[Q:.*]] = %c0 to %c96 step %c32 iter_args({{.*}}) -> (tensor<1x200x4xf32>, tensor<1x200xf32>)
// CHECK: %[[ROW:.*]] = arith.muli %[[Q]], %c2
// CHECK: tensor.extract_slice {{.*}}[0, %[[ROW]], 0] [1, 64, 4]
// The key tiles left of the diagonal: an online softmax, no mask.
// CHECK: scf.for %[[K:.*]] = %c0 to %[[Q]] step %c32 iter_args({{.*}}) -> (tensor<1x64xf32>, tensor<1x64xf32>, tensor<1x64x4xf32>)
// CHECK: tensor.extract_slice {{.*}}[0, 0, %[[K]]] [1, 4, 32]
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x64x32xf32>
// CHECK-NOT: arith.cmpi
// CHECK: math.exp
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x64x4xf32>
// CHECK: scf.yield
// The diagonal tile, masked.
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x64x32xf32>
// CHECK: arith.cmpi ugt
// CHECK: arith.select
// The output rows acc / l and the logsumexp rows m + log l.
// CHECK: arith.divf
// CHECK: math.log
// CHECK: scf.yield
// The remainder: 4 positions (8 rows) against three full key tiles and a
// 4-key diagonal tile.
// CHECK: scf.for {{.*}} = %c0 to %c96 step %c32 iter_args({{.*}}) -> (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8x4xf32>)
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x8x32xf32>
// CHECK: scf.yield
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x8x4xf32>
// CHECK: arith.cmpi ugt
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x8x4xf32>
// CHECK-NOT: tensor<1x200x100xf32>
// CHECK: return
// WHOLE-LABEL: func.func @attention
// WHOLE-NOT: scf.for
// One key tile, the first: nothing to rescale, the output accumulates into
// a fresh zero tensor.
// WHOLE: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x200x4xf32>)
// WHOLE: linalg.batch_matmul {{.*}} -> tensor<1x200x100xf32>
// WHOLE-NOT: tensor<1x200x4xf32>) {
// WHOLE: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x200x100xf32>, tensor<1x100x4xf32>) outs(%[[ZERO]] : tensor<1x200x4xf32>)
// Tasks (task-bytes): a budget of 8192 bytes for one task's
// [T·G, T] scores gives T = 32 again. One task per (sequence, key/value
// head, full query tile) in an scf.forall (the unit dimensions fold away):
// it copies its queries from the sequence's layout, transposes each key
// tile and copies each value tile into tiles of its own, and writes its
// output rows and logsumexp into its slices of the sequence's layout. The
// remainder tile (4 positions) is a forall of one task, folded.
// TASKS-LABEL: func.func @attention
// TASKS: scf.forall (%[[T:.*]]) in (3) shared_outs(%[[OUT:.*]] = %{{.*}}, %[[LSE:.*]] = %{{.*}}) -> (tensor<1x100x1x2x4xf32>, tensor<1x100x1x2xf32>)
// TASKS: %[[POS:.*]] = arith.muli %[[T]], %c32
// TASKS: tensor.extract_slice %{{.*}}[0, %[[POS]], 0, 0, 0] [1, 32, 1, 2, 4] {{.*}} to tensor<32x2x4xf32>
// TASKS: linalg.copy
// TASKS: scf.for %[[K:.*]] = %c0 to %[[POS]] step %c32
// TASKS: tensor.extract_slice %arg1[0, %[[K]], 0, 0] [1, 32, 1, 4] {{.*}} to tensor<32x4xf32>
// TASKS: linalg.transpose {{.*}} outs(%{{.*}} : tensor<4x32xf32>)
// TASKS: linalg.batch_matmul {{.*}} -> tensor<1x64x32xf32>
// TASKS: linalg.batch_matmul {{.*}} -> tensor<1x64x4xf32>
// TASKS: scf.yield
// TASKS: arith.cmpi ugt
// TASKS: tensor.extract_slice %[[OUT]][0, %[[POS]], 0, 0, 0] [1, 32, 1, 2, 4]
// TASKS: tensor.extract_slice %[[LSE]][0, %[[POS]], 0, 0] [1, 32, 1, 2]
// TASKS: scf.forall.in_parallel
// TASKS: tensor.parallel_insert_slice %{{.*}} into %[[OUT]][0, %[[POS]], 0, 0, 0] [1, 32, 1, 2, 4]
// TASKS: tensor.parallel_insert_slice %{{.*}} into %[[LSE]][0, %[[POS]], 0, 0] [1, 32, 1, 2]
// TASKS: tensor.extract_slice %{{.*}}[0, 96, 0, 0, 0] [1, 4, 1, 2, 4] {{.*}} to tensor<4x2x4xf32>
// TASKS: linalg.batch_matmul {{.*}} -> tensor<1x8x32xf32>
// TASKS: linalg.batch_matmul {{.*}} -> tensor<1x8x4xf32>
// TASKS-NOT: tensor<1x200x
// TASKS: return
func.func @attention(%q: tensor<1x100x2x4xf32>, %k: tensor<1x100x1x4xf32>, %v: tensor<1x100x1x4xf32>) -> (tensor<1x100x2x4xf32>, tensor<1x100x2xf32>) {
  %o, %lse = tg.attention %q, %k, %v {causal} : tensor<1x100x2x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1x4xf32> -> tensor<1x100x2x4xf32>, tensor<1x100x2xf32>
  return %o, %lse : tensor<1x100x2x4xf32>, tensor<1x100x2xf32>
}

// WHOLE-LABEL: func.func @cross
// Not causal, more keys than queries: every query tile visits the full key
// tiles (a loop with a static bound) and the remainder, none masked.
// CHECK-LABEL: func.func @cross
// CHECK-NOT: arith.cmpi
// CHECK: scf.for {{.*}} = %c0 to %c96 step %c32 iter_args({{.*}}) -> (tensor<1x200x4xf32>, tensor<1x200xf32>)
// CHECK: scf.for {{.*}} = %c0 to %c96 step %c32
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x64x32xf32>
// CHECK: scf.yield
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x64x4xf32>
// CHECK-NOT: arith.cmpi
// CHECK: return
func.func @cross(%q: tensor<1x100x2x4xf32>, %k: tensor<1x100x1x4xf32>, %v: tensor<1x100x1x4xf32>) -> tensor<1x100x2x4xf32> {
  %o, %lse = tg.attention %q, %k, %v : tensor<1x100x2x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1x4xf32> -> tensor<1x100x2x4xf32>, tensor<1x100x2xf32>
  return %o : tensor<1x100x2x4xf32>
}

// The gradient: per query tile, dQ's rows accumulate over the key tiles and
// are written once; dK's and dV's rows accumulate in place; the
// probabilities come from the logsumexp (no row max, no row sum). With
// transposed_operands, dV and dK read P and dS transposed through their
// products' maps: no score tile is transposed.
// delta = rowsum(dO ∘ O) once, before the tiles, reading dO and O in the
// sequence's layout through its maps: O is never transposed to heads.
// CHECK-LABEL: func.func @grad
// CHECK-NOT: tensor<1x200x100xf32>
// CHECK-NOT: linalg.transpose {{.*}} tensor<1x32x64xf32>
// CHECK-NOT: linalg.transpose ins(%arg4
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<1x100x1x2x4xf32>, tensor<1x100x1x2x4xf32>) outs(%{{.*}} : tensor<1x1x100x2xf32>)
// CHECK-NOT: linalg.transpose ins(%arg4
// CHECK: scf.for %[[GQ:.*]] = %c0 to %c96 step %c32 iter_args({{.*}}) -> (tensor<1x200x4xf32>, tensor<1x100x4xf32>, tensor<1x100x4xf32>)
// CHECK: scf.for %[[GK:.*]] = %c0 to %[[GQ]] step %c32 iter_args({{.*}}) -> (tensor<1x64x4xf32>, tensor<1x100x4xf32>, tensor<1x100x4xf32>)
// CHECK: linalg.batch_matmul {{.*}} -> tensor<1x64x32xf32>
// CHECK-NOT: arith.maximumf
// CHECK: math.exp
// CHECK: tensor.extract_slice {{.*}}[0, %[[GK]], 0] [1, 32, 4]
// CHECK: linalg.batch_matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%{{.*}}, %{{.*}} : tensor<1x64x32xf32>, tensor<1x64x4xf32>) {{.*}} -> tensor<1x32x4xf32>
// CHECK: tensor.insert_slice {{.*}}[0, %[[GK]], 0] [1, 32, 4]
// CHECK: scf.yield
// CHECK: arith.cmpi ugt
// CHECK: scf.yield
// CHECK-NOT: tensor<1x200x100xf32>
// CHECK: return
func.func @grad(%g: tensor<1x100x2x4xf32>, %q: tensor<1x100x2x4xf32>, %k: tensor<1x100x1x4xf32>, %v: tensor<1x100x1x4xf32>, %o: tensor<1x100x2x4xf32>, %lse: tensor<1x100x2xf32>) -> (tensor<1x100x2x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1x4xf32>) {
  %dq, %dk, %dv = tg.attention_grad %g, %q, %k, %v, %o, %lse {causal} : tensor<1x100x2x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x2xf32>
  return %dq, %dk, %dv : tensor<1x100x2x4xf32>, tensor<1x100x1x4xf32>, tensor<1x100x1x4xf32>
}

// The gradient as tasks (task-bytes): one per (sequence, key/value head),
// its query tiles in order inside it (dK and dV accumulate over them). A
// task copies its queries and dO (the G heads of its group), K and the
// transposes of K and V from the sequence's layout into tensors of its
// own, and copies its dQ, dK and dV by a loop into their slices of the
// sequence's layout at the end.
// TASKS-LABEL: func.func @grad_tasks
// TASKS: scf.forall (%[[SEQ:.*]], %[[HEAD:.*]]) in (2, 2) shared_outs(%[[DQ:.*]] = %{{.*}}, %[[DK:.*]] = %{{.*}}, %[[DV:.*]] = %{{.*}}) -> (tensor<2x20x2x1x4xf32>, tensor<2x20x2x4xf32>, tensor<2x20x2x4xf32>)
// TASKS: tensor.extract_slice %{{.*}}[%[[SEQ]], 0, %[[HEAD]], 0, 0] [1, 20, 1, 1, 4] {{.*}} to tensor<20x1x4xf32>
// TASKS: linalg.copy
// TASKS: linalg.transpose ins(%{{.*}} : tensor<20x4xf32>) outs(%{{.*}} : tensor<4x20xf32>)
// TASKS: linalg.batch_matmul {{.*}} -> tensor<1x20x20xf32>
// TASKS: arith.cmpi ugt
// TASKS: %[[DQS:.*]] = tensor.extract_slice %[[DQ]][%[[SEQ]], 0, %[[HEAD]], 0, 0] [1, 20, 1, 1, 4]
// TASKS: %[[DQW:.*]] = linalg.copy ins(%{{.*}} : tensor<20x1x4xf32>) outs(%[[DQS]] : tensor<20x1x4xf32>)
// TASKS: %[[DKS:.*]] = tensor.extract_slice %[[DK]][%[[SEQ]], 0, %[[HEAD]], 0] [1, 20, 1, 4]
// TASKS: linalg.copy ins(%{{.*}} : tensor<20x4xf32>) outs(%[[DKS]] : tensor<20x4xf32>)
// TASKS: scf.forall.in_parallel
// TASKS: tensor.parallel_insert_slice %[[DQW]] into %[[DQ]][%[[SEQ]], 0, %[[HEAD]], 0, 0] [1, 20, 1, 1, 4]
// TASKS: tensor.parallel_insert_slice %{{.*}} into %[[DK]][%[[SEQ]], 0, %[[HEAD]], 0] [1, 20, 1, 4]
// TASKS: tensor.parallel_insert_slice %{{.*}} into %[[DV]][%[[SEQ]], 0, %[[HEAD]], 0] [1, 20, 1, 4]
func.func @grad_tasks(%g: tensor<2x20x2x4xf32>, %q: tensor<2x20x2x4xf32>, %k: tensor<2x20x2x4xf32>, %v: tensor<2x20x2x4xf32>, %o: tensor<2x20x2x4xf32>, %lse: tensor<2x20x2xf32>) -> (tensor<2x20x2x4xf32>, tensor<2x20x2x4xf32>, tensor<2x20x2x4xf32>) {
  %dq, %dk, %dv = tg.attention_grad %g, %q, %k, %v, %o, %lse {causal} : tensor<2x20x2x4xf32>, tensor<2x20x2x4xf32>, tensor<2x20x2x4xf32>, tensor<2x20x2xf32>
  return %dq, %dk, %dv : tensor<2x20x2x4xf32>, tensor<2x20x2x4xf32>, tensor<2x20x2x4xf32>
}
