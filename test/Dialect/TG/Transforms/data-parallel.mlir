// tg-data-parallel: every gradient summed over the processes, weighted by
// the process's share of the global token count (input dp_weight).
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff --tg-data-parallel=bucket-bytes=0 | FileCheck %s
// RUN: tgc-opt %S/optimizer.mlir --tg-autodiff --tg-data-parallel | FileCheck %s --check-prefix=BUCKET
// RUN: tgc-opt %S/optimizer.mlir --tgc-training-graph="optimizer=sgd fusion=none data-parallel=true dp-bucket-bytes=0" | FileCheck %s --check-prefix=STEP
// RUN: tgc-opt %S/optimizer.mlir --tgc-training-graph="optimizer=sgd fusion=none data-parallel=true dp-bucket-bytes=0 optimizer-in-backward=false" | FileCheck %s --check-prefix=END
// RUN: not tgc-opt %S/optimizer.mlir --tg-data-parallel 2>&1 | FileCheck %s --check-prefix=NOSTEP
// RUN: tgc stats %examples/mlp.json --data-parallel | FileCheck %s --check-prefix=STATS
// The MLP's 668,672 weights, once per step.
// STATS: communication 2.55 MiB (summed over the processes per step, in 3 all-reduces)
// RUN: tgc stats %examples/tiny-llama.json --data-parallel | FileCheck %s --check-prefix=BUCKETS
// RUN: tgc stats %examples/tiny-llama.json --data-parallel --dp-bucket-kib=0 | FileCheck %s --check-prefix=NOBUCKETS
// BUCKETS: communication 12.57 MiB (summed over the processes per step, in 17 all-reduces)
// NOBUCKETS: communication 12.57 MiB (summed over the processes per step, in 39 all-reduces)
// RUN: not tgc-opt %S/optimizer.mlir --tg-autodiff --tg-optimizer --tg-data-parallel 2>&1 | FileCheck %s --check-prefix=AFTER

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x8xf32> {tg.param = "w"}
// CHECK-SAME: %[[WEIGHT:[^:]*]]: tensor<f32> {tg.input = "dp_weight"})
// CHECK: %[[GW:.*]] = tg.matmul {{.*}}transpose_lhs
// CHECK-NEXT: %[[SW:.*]], %[[RW:.*]] = tg.all_reduce_start(%[[GW]]) weight %[[WEIGHT]] : tensor<4x8xf32>
// CHECK: %[[GB:.*]] = tg.reduce_sum
// CHECK-NEXT: %[[SB:.*]], %[[RB:.*]] = tg.all_reduce_start(%[[GB]]) weight %[[WEIGHT]] : tensor<4xf32>
// CHECK: %[[W1:.*]] = tg.collective_wait %[[RW]](%[[SW]]) : tensor<4x8xf32>
// CHECK-NEXT: %[[B1:.*]] = tg.collective_wait %[[RB]](%[[SB]]) : tensor<4xf32>
// CHECK-NEXT: return %{{.*}}, %[[W1]], %[[B1]]

// With the optimizer in the backward sweep, the first collective is waited
// for after the second starts, and each update follows its own wait.
// STEP-LABEL: func.func @train_step
// STEP: tg.all_reduce_start
// STEP: tg.all_reduce_start
// STEP-NEXT: tg.collective_wait
// STEP-NEXT: tg.sum_squares
// STEP-NEXT: tg.sgd_update
// STEP: tg.collective_wait
// STEP-NEXT: tg.sum_squares
// STEP-NEXT: tg.sgd_update
// STEP: tg.global_norm
// Without it, every wait comes before the optimizer at the end.
// END-LABEL: func.func @train_step
// END: tg.collective_wait
// END-NEXT: tg.collective_wait
// END-NEXT: tg.sum_squares

// Both gradients (128 and 16 bytes) fit one bucket of the default 1 MiB:
// one collective, started when the later of them is complete.
// BUCKET-LABEL: func.func @train_step
// BUCKET: %[[GW:.*]] = tg.matmul {{.*}}transpose_lhs
// BUCKET: %[[GB:.*]] = tg.reduce_sum
// BUCKET-NEXT: %[[S:.*]]:2, %[[R:.*]] = tg.all_reduce_start(%[[GW]], %[[GB]]) weight %{{.*}} : tensor<4x8xf32>, tensor<4xf32>
// BUCKET: %[[W:.*]]:2 = tg.collective_wait %[[R]](%[[S]]#0, %[[S]]#1) : tensor<4x8xf32>, tensor<4xf32>
// BUCKET-NEXT: return %{{.*}}, %[[W]]#0, %[[W]]#1

// RUN: not tgc-opt %S/Inputs/step-declaration.mlir --tg-data-parallel 2>&1 | FileCheck %s --check-prefix=NOBODY
// NOBODY: error: tg-data-parallel: @train_step must have a single block
// NOSTEP: error: tg-data-parallel: no function @train_step (run tg-autodiff first)
// AFTER: error: tg-data-parallel: @train_step must return gradients (tg.grad) and have no optimizer state: run it after tg-autodiff and before tg-optimizer
