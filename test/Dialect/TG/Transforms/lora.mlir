// tg-lora puts adapters A [r, in] and B [out, r] beside each targeted
// product (tg.linear with W [out, in]; tg.matmul with a Conv1D W [in, out])
// and freezes every other parameter.
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 targets=q_proj' | FileCheck %s
// RUN: tgc-opt %s --tg-lora='rank=4 alpha=8 rslora=true targets=q_proj' | FileCheck %s --check-prefix=RS
// RUN: tgc-opt %s --tg-lora='rank=2 targets=all-linear' | FileCheck %s --check-prefix=ALL
// RUN: tgc-opt %s --tg-lora | FileCheck %s --check-prefix=OFF
// RUN: not tgc-opt %s --tg-lora='rank=2 targets=k_proj' 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not tgc-opt %s --tg-lora='rank=9 targets=q_proj' 2>&1 | FileCheck %s --check-prefix=WIDE
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=4 targets=embed' | FileCheck %s --check-prefix=TIED
// RUN: tgc-opt %s --tgc-training-graph='lora-rank=2 lora-targets=q_proj optimizer=adamw' | FileCheck %s --check-prefix=STEP

// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[E:[^:]*]]: tensor<16x8xf32> {tg.frozen, tg.param = "embed.weight"}
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x8xf32> {tg.frozen, tg.param = "layers.0.q_proj.weight"}
// CHECK-SAME: %[[A:[^:]*]]: tensor<2x8xf32> {tg.param = "layers.0.q_proj.lora_A.weight"}
// CHECK-SAME: %[[B:[^:]*]]: tensor<8x2xf32> {tg.param = "layers.0.q_proj.lora_B.weight"}
// CHECK-SAME: %{{[^:]*}}: tensor<8x8xf32> {tg.frozen, tg.param = "layers.0.o_proj.weight"}
// CHECK-SAME: %{{[^:]*}}: tensor<8xf32> {tg.frozen, tg.param = "layers.0.o_proj.bias"}
// CHECK: %[[X:.*]] = tg.embedding
// CHECK: %[[Y:.*]] = tg.linear %[[X]], %[[W]] {tg.layer = 0 : i64}
// CHECK: %[[D:.*]] = tg.linear %[[X]], %[[A]] {tg.layer = 0 : i64} : tensor<3x8xf32>, tensor<2x8xf32> -> tensor<3x2xf32>
// CHECK: %[[S:.*]] = tg.scale %[[D]] {factor = 4.000000e+00 : f64, tg.layer = 0 : i64}
// CHECK: %[[U:.*]] = tg.linear %[[S]], %[[B]] {tg.layer = 0 : i64} : tensor<3x2xf32>, tensor<8x2xf32> -> tensor<3x8xf32>
// CHECK: %[[Z:.*]] = tg.add %[[Y]], %[[U]]
// CHECK: tg.relu %[[Z]]
// CHECK-NOT: lora

// RS: tg.scale %{{.*}} {factor = 4.000000e+00 : f64

// all-linear: q_proj and o_proj; not the head tied to the embedding.
// ALL: {tg.param = "layers.0.q_proj.lora_A.weight"}
// ALL-SAME: {tg.param = "layers.0.o_proj.lora_A.weight"}
// ALL-NOT: embed.lora

// OFF-NOT: lora
// OFF-NOT: tg.frozen

// NOMATCH: error: tg-lora: LoRA target 'k_proj' matches no linear layer of @forward (its layers: embed, q_proj, o_proj)
// WIDE: error: tg-lora: LoRA rank r = 9 is larger than module 'layers.0.q_proj' (8 inputs, 8 outputs): r must be at most 8
// An embedding (here tied to the head) as PEFT's lora.Embedding adapts it:
// A [r, V] and B [D, r], the lookup gains embed(Aᵀ, ids)·s·Bᵀ; the tied
// head's product keeps the base table.
// TIED-LABEL: func.func @forward
// TIED-SAME: %[[E:[^:]*]]: tensor<16x8xf32> {tg.frozen, tg.param = "embed.weight"}
// TIED-SAME: %[[A:[^:]*]]: tensor<2x16xf32> {tg.param = "embed.lora_embedding_A"}
// TIED-SAME: %[[B:[^:]*]]: tensor<8x2xf32> {tg.param = "embed.lora_embedding_B"}
// TIED: %[[X:.*]] = tg.embedding %[[E]], %[[IDS:[^ ]*]]
// TIED: %[[AT:.*]] = tg.transpose %[[A]] [1, 0] : tensor<2x16xf32> -> tensor<16x2xf32>
// TIED: %[[D:.*]] = tg.embedding %[[AT]], %[[IDS]]
// TIED: %[[S:.*]] = tg.scale %[[D]] {factor = 2.000000e+00 : f64}
// TIED: %[[U:.*]] = tg.linear %[[S]], %[[B]] : tensor<3x2xf32>, tensor<8x2xf32> -> tensor<3x8xf32>
// TIED: %[[Z:.*]] = tg.add %[[X]], %[[U]]
// TIED: tg.linear %[[Z]], %{{.*}}
// TIED: tg.linear %{{.*}}, %[[E]] : tensor<3x8xf32>, tensor<16x8xf32>

// The adapters are the only trainable parameters: no gradient products
// for the frozen weights.
// STEP-LABEL: func.func @train_step
// STEP-SAME: -> (tensor<f32> {tg.output = "loss"}, tensor<f32> {tg.output = "grad_norm"}, tensor<2x8xf32> {tg.param = "layers.0.q_proj.lora_A.weight"}, tensor<8x2xf32> {tg.param = "layers.0.q_proj.lora_B.weight"}, tensor<2x8xf32> {tg.state = "exp_avg.layers.0.q_proj.lora_A.weight"}
func.func @forward(%e: tensor<16x8xf32> {tg.param = "embed.weight"},
                   %wq: tensor<8x8xf32> {tg.param = "layers.0.q_proj.weight"},
                   %wo: tensor<8x8xf32> {tg.param = "layers.0.o_proj.weight"},
                   %bo: tensor<8xf32> {tg.param = "layers.0.o_proj.bias"},
                   %ids: tensor<3xi32> {tg.input = "input_ids"},
                   %t: tensor<3xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %e, %ids : tensor<16x8xf32>, tensor<3xi32> -> tensor<3x8xf32>
  %q = tg.linear %x, %wq {tg.layer = 0 : i64} : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
  %r = tg.relu %q : tensor<3x8xf32>
  %o = tg.linear %r, %wo, %bo : tensor<3x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
  %logits = tg.linear %o, %e : tensor<3x8xf32>, tensor<16x8xf32> -> tensor<3x16xf32>
  %loss = tg.cross_entropy %logits, %t : tensor<3x16xf32>, tensor<3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
