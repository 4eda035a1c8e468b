// tg-shard-accumulated-gradients (ZeRO-3 with 2 micro-batches): each
// micro-batch's head gradient is reduce-scattered as soon as that
// micro-batch computes it, waited for after the next scatter starts, and
// the two shards are added and halved where the old shard of the mean was
// read (the update). No whole gradient is added up across micro-batches.
// RUN: tgc-opt %S/Inputs/two-layers.mlir --tgc-training-graph="fusion=none data-parallel=true zero-processes=3 shard-parameters=true dp-bucket-bytes=0 micro-batches=2" | FileCheck %s
// RUN: not tgc-opt %S/Inputs/two-layers.mlir --tg-shard-accumulated-gradients=micro-batches=2 2>&1 | FileCheck %s --check-prefix=UNSHARDED

// One bucket for all gradients: the first micro-batch's scatter is waited
// for after the second's starts, the second's right after it starts.
// RUN: tgc-opt %S/Inputs/two-layers.mlir --tgc-training-graph="fusion=none data-parallel=true zero-processes=3 shard-parameters=true dp-bucket-bytes=100000 micro-batches=2" | FileCheck %s --check-prefix=ONE
// ONE: %{{.*}}:4, %[[SA:.*]]:4, %[[RA:.*]] = tg.reduce_scatter_start
// ONE: %{{.*}}:4, %[[SB:.*]]:4, %[[RB:.*]] = tg.reduce_scatter_start
// ONE-NEXT: %[[WA:.*]]:8 = tg.collective_wait %[[RA]]
// ONE-NEXT: %[[WB:.*]]:8 = tg.collective_wait %[[RB]]
// ONE-NEXT: tg.add %[[WA]]#4, %[[WB]]#4
// ONE-NOT: tg.reduce_scatter_start

// CHECK-LABEL: func.func @train_step
// CHECK: tg.slice %{{.*}} axis 0 start 0 size 2
// CHECK: %{{.*}}, %[[S0:.*]], %[[R0:.*]] = tg.reduce_scatter_start(%{{.*}}) weight %{{.*}} over 3 : tensor<5x8xf32>
// CHECK: tg.reduce_scatter_start
// CHECK-NEXT: %[[W0:.*]]:2 = tg.collective_wait %[[R0]](%{{.*}}, %[[S0]]) : tensor<5x8xf32>, tensor<14xf32>
// CHECK: tg.slice %{{.*}} axis 0 start 2 size 2
// CHECK: %{{.*}}, %[[S1:.*]], %[[R1:.*]] = tg.reduce_scatter_start(%{{.*}}) weight %{{.*}} over 3 : tensor<5x8xf32>
// CHECK: %[[W1:.*]]:2 = tg.collective_wait %[[R1]](%{{.*}}, %[[S1]]) : tensor<5x8xf32>, tensor<14xf32>
// CHECK-NEXT: %[[SUM:.*]] = tg.add %[[W0]]#1, %[[W1]]#1 : tensor<14xf32>, tensor<14xf32> -> tensor<14xf32>
// CHECK-NEXT: %[[HALF:.*]] = tg.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[MEAN:.*]] = tg.mul %[[SUM]], %[[HALF]]
// CHECK: tg.adamw_update %arg3, %[[MEAN]]
// CHECK-NOT: tg.add %{{.*}} : tensor<5x8xf32>, tensor<5x8xf32>

// UNSHARDED: tg-shard-accumulated-gradients: no function @train_step whose optimizer state is sharded (run tg-shard-optimizer first)
