// tg.remat annotations win over every policy.
// RUN: tgc-opt %s --tgc-training-graph="fusion=none with-optimizer=false remat=layers" | FileCheck %s --check-prefix=LAYERS
// RUN: tgc-opt %s --tgc-training-graph="fusion=none with-optimizer=false remat=none" | FileCheck %s --check-prefix=NONE

// layers: layer 1's norm is annotated "save", so only its projection is
// recomputed (from the kept norm output); layer 0 is checkpointed as usual.
// The head (annotated "recompute") is cloned although it is a matmul.
// LAYERS-LABEL: func.func @train_step
// LAYERS: %[[N1:.*]] = tg.rms_norm {{.*}} {eps = 1.000000e-05 : f64, tg.layer = 1 : i64, tg.remat = "save"}
// LAYERS: tg.cross_entropy_grad
// LAYERS-NOT: tg.rms_norm {{.*}}tg.layer = 1 : i64, tg.recomputed
// LAYERS: tg.linear %[[N1]], %{{.*}} {tg.layer = 1 : i64, tg.recomputed}
// LAYERS: tg.rms_norm {{.*}}tg.layer = 0 : i64, tg.recomputed
// LAYERS: return

// none: only the annotated head is recomputed, right before its gradient.
// NONE-LABEL: func.func @train_step
// NONE: %[[LOGITS:.*]] = tg.linear {{.*}} {tg.remat = "recompute"}
// NONE: tg.cross_entropy %[[LOGITS]]
// NONE-NEXT: %[[RE:.*]] = tg.linear {{.*}} {tg.recomputed}
// NONE-NEXT: tg.cross_entropy_grad %{{.*}}, %[[RE]]
// NONE-NOT: tg.recomputed

func.func @forward(%emb: tensor<16x8xf32> {tg.param = "embed"},
                   %n0: tensor<8xf32> {tg.param = "layers.0.norm"},
                   %w0: tensor<8x8xf32> {tg.param = "layers.0.proj"},
                   %n1: tensor<8xf32> {tg.param = "layers.1.norm"},
                   %w1: tensor<8x8xf32> {tg.param = "layers.1.proj"},
                   %head: tensor<16x8xf32> {tg.param = "head"},
                   %ids: tensor<2x4xi32> {tg.input = "input_ids"},
                   %tgt: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %h0 = tg.embedding %emb, %ids : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32> loc("embed")
  %a0 = tg.rms_norm %h0, %n0 {eps = 1.0e-5 : f64, tg.layer = 0 : i64} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32> loc("layers.0.norm")
  %p0 = tg.linear %a0, %w0 {tg.layer = 0 : i64} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32> loc("layers.0.proj")
  %s0 = tg.silu %p0 {tg.layer = 0 : i64} : tensor<2x4x8xf32> loc("layers.0.act")
  %h1 = tg.add %h0, %s0 {tg.layer = 0 : i64} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("layers.0.residual")
  %a1 = tg.rms_norm %h1, %n1 {eps = 1.0e-5 : f64, tg.layer = 1 : i64, tg.remat = "save"} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32> loc("layers.1.norm")
  %p1 = tg.linear %a1, %w1 {tg.layer = 1 : i64} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32> loc("layers.1.proj")
  %s1 = tg.silu %p1 {tg.layer = 1 : i64} : tensor<2x4x8xf32> loc("layers.1.act")
  %h2 = tg.add %h1, %s1 {tg.layer = 1 : i64} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("layers.1.residual")
  %l = tg.linear %h2, %head {tg.remat = "recompute"} : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32> loc("head")
  %loss = tg.cross_entropy %l, %tgt : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}
