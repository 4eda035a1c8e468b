// tg-shard-parameters (ZeRO-3): over 3 processes each parameter argument
// becomes this process's shard (layers.0.w: 64 -> 22 elements), the update
// writes the shard in place and the step returns it (no all-gather of
// updated parameters). The readers of a whole parameter get it from one
// gather per run of a unit's readers: layer 0's forward (w and b in one
// bucket), layer 1's forward, the head's forward and backward (one run:
// nothing of another unit reads between them), layer 1's backward (its
// input gradient needs w again). Layer 0's backward reads no weight: its
// input's gradient is not needed. With gather-prefetch=1 each start runs
// one run ahead.
// RUN: tgc-opt %S/Inputs/two-layers.mlir --tgc-training-graph="fusion=none data-parallel=true zero-processes=3 shard-parameters=true gather-prefetch=1 dp-bucket-bytes=0" | FileCheck %s
// RUN: tgc-opt %S/Inputs/two-layers.mlir --tgc-training-graph="fusion=none data-parallel=true zero-processes=3 shard-parameters=true gather-prefetch=0 dp-bucket-bytes=0" | FileCheck %s --check-prefix=NOPREFETCH
// RUN: not tgc-opt %S/Inputs/two-layers.mlir --tg-autodiff --tg-data-parallel --tg-optimizer --tg-shard-parameters 2>&1 | FileCheck %s --check-prefix=NOZERO1
// RUN: not tgc-opt %S/Inputs/two-layers.mlir --tg-autodiff --tg-data-parallel --tg-optimizer --tg-shard-optimizer=processes=3 --tg-shard-parameters=prefetch=-2 2>&1 | FileCheck %s --check-prefix=PREFETCH
// RUN: not tgc-opt %S/Inputs/two-layers.mlir --tg-autodiff --tg-data-parallel --tg-optimizer --tg-shard-optimizer=processes=3 --tg-shard-parameters=max-prefetch=0 2>&1 | FileCheck %s --check-prefix=MAXPREFETCH
// RUN: not tgc-opt %S/Inputs/two-layers.mlir --tg-autodiff --tg-data-parallel --tg-optimizer --tg-shard-optimizer=processes=3 --tg-shard-parameters="prefetch=1 compute-rate=-1" 2>&1 | FileCheck %s --check-prefix=RATES

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W0:[^:]*]]: tensor<22xf32> {tg.param = "layers.0.w", tg.sharded = tensor<8x8xf32>}
// CHECK-SAME: %[[B0:[^:]*]]: tensor<3xf32> {tg.param = "layers.0.b", tg.sharded = tensor<8xf32>}
// CHECK-SAME: %[[W1:[^:]*]]: tensor<22xf32> {tg.param = "layers.1.w", tg.sharded = tensor<8x8xf32>}
// CHECK-SAME: %[[H:[^:]*]]: tensor<14xf32> {tg.param = "head.weight", tg.sharded = tensor<5x8xf32>}
// CHECK-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "grad_norm"}, tensor<22xf32> {tg.param = "layers.0.w", tg.sharded = tensor<8x8xf32>}
// CHECK-NEXT: %[[S0:.*]]:2, %[[G0:.*]]:2, %[[R0:.*]] = tg.parameter_gather_start(%[[W0]], %[[B0]]) over 3 : tensor<22xf32>, tensor<3xf32> into [tensor<8x8xf32>, tensor<8xf32>]
// CHECK: %[[L0:.*]]:4 = tg.collective_wait %[[R0]](%[[S0]]#0, %[[S0]]#1, %[[G0]]#0, %[[G0]]#1)
// CHECK-NEXT: %[[S1:.*]], %[[G1:.*]], %[[R1:.*]] = tg.parameter_gather_start(%[[W1]]) over 3 : tensor<22xf32> into [tensor<8x8xf32>]
// CHECK-NEXT: tg.linear %{{.*}}, %[[L0]]#2, %[[L0]]#3
// CHECK-NEXT: tg.silu
// CHECK-NEXT: %[[L1:.*]]:2 = tg.collective_wait %[[R1]](%[[S1]], %[[G1]])
// CHECK-NEXT: %[[S2:.*]], %[[G2:.*]], %[[R2:.*]] = tg.parameter_gather_start(%[[H]]) over 3 : tensor<14xf32> into [tensor<5x8xf32>]
// CHECK-NEXT: tg.linear %{{.*}}, %[[L1]]#1
// CHECK-NEXT: tg.silu
// CHECK-NEXT: %[[LH:.*]]:2 = tg.collective_wait %[[R2]](%[[S2]], %[[G2]])
// CHECK-NEXT: %[[S3:.*]], %[[G3:.*]], %[[R3:.*]] = tg.parameter_gather_start(%[[W1]]) over 3
// CHECK-NEXT: tg.linear %{{.*}}, %[[LH]]#1
// CHECK: tg.matmul %{{.*}}, %[[LH]]#1 :
// CHECK: %[[L3:.*]]:2 = tg.collective_wait %[[R3]](%[[S3]], %[[G3]])
// CHECK-NEXT: tg.matmul %{{.*}}, %[[L3]]#1 :
// CHECK: %[[NEWW1:.*]], %{{.*}}, %{{.*}} = tg.adamw_update %[[W1]], %{{.*}} : tensor<22xf32>, tensor<22xf32>
// CHECK: %[[NEWW0:.*]], %{{.*}}, %{{.*}} = tg.adamw_update %[[W0]], %{{.*}} : tensor<22xf32>, tensor<22xf32>
// CHECK-NOT: tg.parameter_gather_start
// CHECK-NOT: tg.all_gather_start
// CHECK-NOT: tg.shard
// CHECK: return %{{.*}}, %{{.*}}, %[[NEWW0]], %{{.*}}, %[[NEWW1]],

// The planned prefetch (the default) on the tiny llama, 1 x 64 rows, at
// 10 GB/s and 50 GFLOP/s: one run ahead, the vocabulary projection's
// gather would overlap only the final norm, so it starts two runs ahead,
// while layer 3 computes; so does layer 3's backward gather, over the
// loss and the final norm's backward. The time model's estimate goes on
// the step. At 1000 GB/s every transfer hides one run ahead.
// RUN: tgc %examples/tiny-llama.json --zero=3 --processes=2 --batch-size=1 --seq-len=64 --compute-rate=50 --emit=grad | FileCheck %s --check-prefix=PLANNED
// RUN: tgc %examples/tiny-llama.json --zero=3 --processes=2 --batch-size=1 --seq-len=64 --compute-rate=50 --gather-bandwidth=1000 --emit=grad | FileCheck %s --check-prefix=FAST
// PLANNED-LABEL: func.func @train_step
// PLANNED-SAME: tg.gather_prefetch = {compute_rate = 5.000000e+01 : f64, depth = 2 : i64, exposed_seconds = {{.*}}, gather_bandwidth = 1.000000e+01 : f64, planned = true, transfer_seconds = {{.*}}}
// PLANNED: tg.parameter_gather_start(%{{.*}}) over 2 : tensor<128xf32> into [tensor<256xf32>]
// PLANNED-NEXT: %{{.*}}, %{{.*}}, %[[RH:.*]] = tg.parameter_gather_start(%{{.*}}) over 2 : tensor<32768xf32> into [tensor<256x256xf32>]
// PLANNED-NEXT: tg.rms_norm {{.*}}tg.layer = 3
// PLANNED: tg.collective_wait
// PLANNED-NEXT: tg.rms_norm %{{[^{]*}} {eps = 1.000000e-05 : f64} :
// PLANNED-NEXT: %[[H:.*]]:2 = tg.collective_wait %[[RH]]
// PLANNED-NEXT: tg.parameter_gather_start(%{{.*}}) over 2 : tensor<128xf32> into [tensor<256xf32>]
// PLANNED-NEXT: tg.parameter_gather_start({{.*}}) over 2 : tensor<88064xf32>
// PLANNED-NEXT: tg.linear_cross_entropy %{{.*}}, %[[H]]#1
// FAST-LABEL: func.func @train_step
// FAST-SAME: depth = 1 : i64
// FAST: tg.rms_norm %{{[^{]*}} {eps = 1.000000e-05 : f64} :
// FAST-NEXT: tg.collective_wait
// FAST-NEXT: tg.parameter_gather_start
// FAST-NEXT: tg.linear_cross_entropy

// Without prefetch each gather starts right before its wait.
// NOPREFETCH: tg.parameter_gather_start
// NOPREFETCH-NEXT: tg.collective_wait
// NOPREFETCH-NEXT: tg.linear
// NOPREFETCH-NEXT: tg.silu
// NOPREFETCH-NEXT: tg.parameter_gather_start
// NOPREFETCH-NEXT: tg.collective_wait
// NOPREFETCH-NEXT: tg.linear

// A frozen weight held in bf16 (frozen-dtype=bf16) is sharded and gathered
// in bf16; its frozen bias, which the product casts to bf16, joins it.
// RUN: tgc-opt %S/Inputs/two-layers.mlir --tgc-training-graph='fusion=none data-parallel=true zero-processes=3 shard-parameters=true dp-bucket-bytes=0 freeze=layers\.0\..* frozen-dtype=bf16' | FileCheck %s --check-prefix=FROZEN
// FROZEN-LABEL: func.func @train_step
// FROZEN-SAME: %arg0: tensor<22xbf16> {tg.frozen, tg.param = "layers.0.w", tg.sharded = tensor<8x8xbf16>}
// FROZEN-SAME: %arg1: tensor<3xf32> {tg.frozen, tg.param = "layers.0.b", tg.sharded = tensor<8xf32>}
// FROZEN: %[[B:.*]] = tg.cast %arg1 : tensor<3xf32> -> tensor<3xbf16>
// FROZEN-NEXT: tg.parameter_gather_start(%[[B]], %arg0) over 3 : tensor<3xbf16>, tensor<22xbf16> into [tensor<8xbf16>, tensor<8x8xbf16>]

// bf16-mixed: a parameter whose readers in a run all cast it to bf16 is
// gathered in bf16 (its shard cast first), and the casts read the gathered
// tensor: half the bytes moved and kept.
// RUN: tgc-opt %S/Inputs/two-layers.mlir --tgc-training-graph="fusion=none data-parallel=true zero-processes=3 shard-parameters=true dp-bucket-bytes=0 precision=bf16-mixed" | FileCheck %s --check-prefix=BF16
// BF16-LABEL: func.func @train_step
// BF16: %[[C0:.*]] = tg.cast %arg0 : tensor<22xf32> -> tensor<22xbf16>
// BF16-NEXT: %[[C1:.*]] = tg.cast %arg1 : tensor<3xf32> -> tensor<3xbf16>
// BF16-NEXT: %[[S:.*]]:2, %[[G:.*]]:2, %[[R:.*]] = tg.parameter_gather_start(%[[C0]], %[[C1]]) over 3 : tensor<22xbf16>, tensor<3xbf16> into [tensor<8x8xbf16>, tensor<8xbf16>]
// BF16: %[[W:.*]]:4 = tg.collective_wait %[[R]]
// BF16: tg.linear %{{.*}}, %[[W]]#2, %[[W]]#3 : tensor<2x8xbf16>, tensor<8x8xbf16>, tensor<8xbf16> -> tensor<2x8xf32>
// BF16-NOT: into [tensor<8x8xf32>

// NOZERO1: error: tg-shard-parameters: expects a step whose optimizer state is sharded (tg-shard-optimizer before it)
// PREFETCH: error: tg-shard-parameters: prefetch must be -1 (planned) or non-negative, got -2
// MAXPREFETCH: error: tg-shard-parameters: max-prefetch must be positive, got 0
// RATES: error: tg-shard-parameters: gather-bandwidth and compute-rate must be positive, got 1.000000e+01 and -1.000000e+00

// The memory per process that tgc stats reports. The tiny llama at 2
// processes: half the parameters held, two layers' weights gathered at
// once. Llama-2-7B at 8 processes, bf16-mixed, remat by layers, 1 x 2048:
// under 12 GiB per process, the layers' weights gathered in bf16. llama-d512-l8 at 4 processes, 1 x 64: half of
// ZeRO-1's total.
// The planned prefetch keeps two layers' weights at once, as one run ahead
// does, with two gathers in flight; the report names its rates and the
// model's estimate.
// RUN: tgc stats %examples/tiny-llama.json --zero=3 --processes=2 --compute-rate=50 | FileCheck %s --check-prefix=STATS
// RUN: tgc stats %examples/tiny-llama.json --zero=3 --processes=2 --gather-prefetch=1 | FileCheck %s --check-prefix=STATS-FIXED
// RUN: tgc stats %examples/tiny-llama.json --zero=3 --processes=2 --json | FileCheck %s --check-prefix=STATS-JSON
// STATS: Parameters   3,295,488
// STATS: Memory per process (ZeRO-3, 2 processes)
// STATS: parameters {{ *}}6.29 MiB   (this process's shards of 12.57 MiB)
// STATS: gathered parameters {{ *}}6.04 MiB   (in the planned peak, 12 gathers per step; at most 2 in flight while a layer computes)
// STATS: gather prefetch {{ *}}2   (planned at 10.0 GB/s and 50.0 GFLOP/s a process: {{[0-9.]+}} of {{[0-9.]+}} ms of transfer not hidden)
// STATS-FIXED: gathered parameters {{ *}}6.04 MiB   (in the planned peak, 12 gathers per step; at most 1 in flight while a layer computes)
// STATS-FIXED: gather prefetch {{ *}}1   (--gather-prefetch at 10.0 GB/s and {{[0-9.]+}} GFLOP/s a process: {{[0-9.]+}} of {{[0-9.]+}} ms of transfer not hidden)
// STATS-JSON: "gather_bandwidth_gbps": 10,
// STATS-JSON: "prefetch_planned": true
// STATS: optimizer state {{ *}}12.57 MiB   (this process's shards)
// STATS: communication {{ *}}37.21 MiB   (whole tensors per step: 17 reduce-scatters of gradients, 12 gathers of parameters)
// RUN: tgc stats %examples/llama-2-7b.json --zero=3 --processes=8 --compute-rate=50 --precision=bf16-mixed --remat=layers --batch-size=1 --seq-len=2048 | FileCheck %s --check-prefix=SEVENB
// SEVENB: Parameters   6,738,415,616
// SEVENB: parameters {{ *}}3.14 GiB   (this process's shards of 25.10 GiB)
// SEVENB: gathered parameters {{ *}}886.05 MiB
// SEVENB: optimizer state {{ *}}6.28 GiB
// SEVENB: total {{ *}}11.50 GiB
// With 2 micro-batches each one's gradients are reduce-scattered (twice the
// traffic) and only the shards are added up (tg-shard-accumulated-gradients):
// 3.14 GiB of accumulated shards, not 25.10 GiB of whole gradients.
// RUN: tgc stats %examples/llama-2-7b.json --zero=3 --processes=8 --compute-rate=50 --precision=bf16-mixed --remat=layers --batch-size=1 --seq-len=2048 --grad-accum=2 | FileCheck %s --check-prefix=SEVENB-ACCUM
// SEVENB-ACCUM: gradients {{ *}}25.10 GiB   (in the planned peak: at most 3.14 GiB alive at once)
// SEVENB-ACCUM: communication {{ *}}100.41 GiB   (whole tensors per step: 516 reduce-scatters of gradients, 264 gathers of parameters)
// SEVENB-ACCUM: planned peak {{ *}}5.76 GiB
// SEVENB-ACCUM: total {{ *}}15.18 GiB
// RUN: tgc stats %examples/llama-d512-l8.json --zero=1 --processes=4 --batch-size=1 --seq-len=64 | FileCheck %s --check-prefix=D512-ZERO1
// RUN: tgc stats %examples/llama-d512-l8.json --zero=3 --processes=4 --compute-rate=50 --batch-size=1 --seq-len=64 | FileCheck %s --check-prefix=D512-ZERO3
// D512-ZERO1: total {{ *}}244.80 MiB
// D512-ZERO3: total {{ *}}121.33 MiB

// Remat knows the weights are gathered: under ZeRO-1 policy none recomputes
// the tiny llama's embedding lookup in the backward pass (cheap, from the
// table and the ids); under ZeRO-3 that would gather the table once more,
// so the lookup's output is kept instead.
// RUN: tgc %examples/tiny-llama.json --zero=1 --processes=2 --emit=grad | FileCheck %s --check-prefix=REMAT1
// RUN: tgc %examples/tiny-llama.json --zero=3 --processes=2 --emit=grad | FileCheck %s --check-prefix=REMAT3
// REMAT1: tg.embedding {{.*}}tg.recomputed
// REMAT3-LABEL: func.func @train_step
// REMAT3-NOT: tg.embedding {{.*}}tg.recomputed
