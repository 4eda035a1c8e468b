// tg-lora on mixture-of-experts layers: each expert's weight of a
// tg.grouped_matmul is a module (PEFT adapts each expert's nn.Linear), and
// the adapted experts' low-rank path is two more grouped products over the
// same routed rows, y + grouped((grouped(x, A_e)·s), B_e); an expert the
// targets leave out reads zero adapters.
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 targets=w1' | FileCheck %s
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 targets=all-linear' | FileCheck %s --check-prefix=ALL
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 target-pattern=.*experts.0.w1' | FileCheck %s --check-prefix=ONE
// RUN: not tgc-opt %s --tg-lora='rank=2 targets=w1 rank-pattern-keys=experts.1.w1 rank-pattern-ranks=4' 2>&1 | FileCheck %s --check-prefix=RANKS

// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[W0:[^:]*]]: tensor<4x8xf32> {tg.frozen, tg.param = "model.layers.0.block_sparse_moe.experts.0.w1.weight"}
// CHECK-SAME: %[[A0:[^:]*]]: tensor<2x8xf32> {tg.param = "model.layers.0.block_sparse_moe.experts.0.w1.lora_A.weight"}
// CHECK-SAME: %[[B0:[^:]*]]: tensor<4x2xf32> {tg.param = "model.layers.0.block_sparse_moe.experts.0.w1.lora_B.weight"}
// CHECK-SAME: %[[W1:[^:]*]]: tensor<4x8xf32> {tg.frozen, tg.param = "model.layers.0.block_sparse_moe.experts.1.w1.weight"}
// CHECK-SAME: %[[A1:[^:]*]]: tensor<2x8xf32> {tg.param = "model.layers.0.block_sparse_moe.experts.1.w1.lora_A.weight"}
// CHECK-SAME: %[[B1:[^:]*]]: tensor<4x2xf32> {tg.param = "model.layers.0.block_sparse_moe.experts.1.w1.lora_B.weight"}
// CHECK: %[[Y:.*]] = tg.grouped_matmul %[[X:[^,]*]], %[[OFF:[^,]*]], %[[W0]], %[[W1]] {tg.layer = 0 : i64, transpose_weights}
// CHECK: %[[D:.*]] = tg.grouped_matmul %[[X]], %[[OFF]], %[[A0]], %[[A1]] {tg.layer = 0 : i64, transpose_weights} : tensor<6x8xf32>, tensor<3xi32>, tensor<2x8xf32>, tensor<2x8xf32> -> tensor<6x2xf32>
// CHECK: %[[S:.*]] = tg.scale %[[D]] {factor = 4.000000e+00 : f64, tg.layer = 0 : i64}
// CHECK: %[[U:.*]] = tg.grouped_matmul %[[S]], %[[OFF]], %[[B0]], %[[B1]] {tg.layer = 0 : i64, transpose_weights} : tensor<6x2xf32>, tensor<3xi32>, tensor<4x2xf32>, tensor<4x2xf32> -> tensor<6x4xf32>
// CHECK: %[[Z:.*]] = tg.add %[[Y]], %[[U]]
// CHECK: tg.relu %[[Z]]
// CHECK-NOT: w2.lora

// all-linear: both experts' w1 and w2 (and nothing frozen stays trainable).
// ALL-COUNT-4: lora_A.weight"}
// ALL-NOT: lora_A.weight"}

// Expert 0 only: expert 1 reads zero adapters, which are constants.
// ONE: "model.layers.0.block_sparse_moe.experts.0.w1.lora_A.weight"
// ONE-NOT: experts.1.w1.lora
// ONE-DAG: %[[ZA:.*]] = tg.constant dense<0.000000e+00> : tensor<2x8xf32>
// ONE-DAG: %[[ZB:.*]] = tg.constant dense<0.000000e+00> : tensor<4x2xf32>
// ONE: tg.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}}, %[[ZA]] {tg.layer = 0 : i64, transpose_weights}
// ONE: tg.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}}, %[[ZB]] {tg.layer = 0 : i64, transpose_weights}

// RANKS: error: tg-lora: LoRA gives the experts 'model.layers.0.block_sparse_moe.experts.0.w1' and 'model.layers.0.block_sparse_moe.experts.1.w1' different ranks or scales (2 and 4, 4 and 2)
func.func @forward(%x: tensor<6x8xf32> {tg.input = "rows"},
                   %off: tensor<3xi32> {tg.input = "offsets"},
                   %w0: tensor<4x8xf32> {tg.param = "model.layers.0.block_sparse_moe.experts.0.w1.weight"},
                   %w1: tensor<4x8xf32> {tg.param = "model.layers.0.block_sparse_moe.experts.1.w1.weight"},
                   %v0: tensor<8x4xf32> {tg.param = "model.layers.0.block_sparse_moe.experts.0.w2.weight"},
                   %v1: tensor<8x4xf32> {tg.param = "model.layers.0.block_sparse_moe.experts.1.w2.weight"}) -> tensor<6x8xf32> {
  %h = tg.grouped_matmul %x, %off, %w0, %w1 {transpose_weights, tg.layer = 0 : i64} : tensor<6x8xf32>, tensor<3xi32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<6x4xf32>
  %r = tg.relu %h : tensor<6x4xf32>
  %y = tg.grouped_matmul %r, %off, %v0, %v1 {transpose_weights, tg.layer = 0 : i64} : tensor<6x4xf32>, tensor<3xi32>, tensor<8x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
  return %y : tensor<6x8xf32>
}
