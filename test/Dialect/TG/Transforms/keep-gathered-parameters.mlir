// tg-keep-gathered-parameters: under a budget for the planned peak, layer
// 1's backward pass reads the weight its forward pass gathered (3 gathers
// a step instead of 4); a budget below the plan, or none, keeps every
// gather. The same step through tgc, trained, is bit-identical
// (test/Distributed/zero3.test).
// RUN: tgc-opt %S/Inputs/two-layers.mlir --tgc-training-graph="fusion=none data-parallel=true zero-processes=3 shard-parameters=true gather-prefetch=1 dp-bucket-bytes=0" --tg-keep-gathered-parameters=budget=1000000 | FileCheck %s
// RUN: tgc-opt %S/Inputs/two-layers.mlir --tgc-training-graph="fusion=none data-parallel=true zero-processes=3 shard-parameters=true gather-prefetch=1 dp-bucket-bytes=0" --tg-keep-gathered-parameters=budget=1000000 | FileCheck %s --check-prefix=COUNT
// RUN: tgc-opt %S/Inputs/two-layers.mlir --tgc-training-graph="fusion=none data-parallel=true zero-processes=3 shard-parameters=true gather-prefetch=1 dp-bucket-bytes=0" --tg-keep-gathered-parameters=budget=1 | FileCheck %s --check-prefix=TIGHT
// RUN: tgc-opt %S/Inputs/two-layers.mlir --tgc-training-graph="fusion=none data-parallel=true zero-processes=3 shard-parameters=true gather-prefetch=1 dp-bucket-bytes=0" --tg-keep-gathered-parameters | FileCheck %s --check-prefix=TIGHT

// COUNT-LABEL: func.func @train_step
// COUNT-COUNT-3: tg.parameter_gather_start
// COUNT-NOT: tg.parameter_gather_start
// CHECK-LABEL: func.func @train_step
// CHECK: %[[L1:.*]]:2 = tg.collective_wait %{{.*}} : tensor<22xf32>, tensor<8x8xf32>
// CHECK-NEXT: tg.parameter_gather_start
// CHECK-NEXT: tg.linear %{{.*}}, %[[L1]]#1 :
// CHECK: tg.matmul %{{.*}}, %[[L1]]#1 : tensor<2x8xf32>, tensor<8x8xf32>

// TIGHT-LABEL: func.func @train_step
// TIGHT-COUNT-4: tg.parameter_gather_start
// TIGHT-NOT: tg.parameter_gather_start

// Through tgc, --memory-budget in bytes: the tiny llama at 2 processes,
// 1 x 64 rows. 30 MiB keeps every layer's weights for its backward pass
// (7 gathers a step instead of 12, planned peak 17.70 MiB); 14 MiB keeps
// some (13.00 MiB).
// RUN: tgc stats %examples/tiny-llama.json --zero=3 --processes=2 --batch-size=1 --seq-len=64 --compute-rate=50 --memory-budget=30MiB | FileCheck %s --check-prefix=STATS30
// RUN: tgc stats %examples/tiny-llama.json --zero=3 --processes=2 --batch-size=1 --seq-len=64 --compute-rate=50 --memory-budget=14MiB | FileCheck %s --check-prefix=STATS14
// STATS30: gathered parameters {{ *}}12.32 MiB   (in the planned peak, 7 gathers per step;
// STATS30: planned peak {{ *}}17.70 MiB
// STATS14: gathered parameters {{ *}}6.29 MiB   (in the planned peak, 9 gathers per step;
// STATS14: planned peak {{ *}}13.00 MiB
