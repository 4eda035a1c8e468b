// Each tg-remat policy on a two-layer model: which forward ops are cloned
// into the reverse graph (tg.recomputed), and which values stay live.
// RUN: tgc-opt %s --tgc-training-graph="fusion=none with-optimizer=false remat=none" | FileCheck %s --check-prefix=NONE
// RUN: tgc-opt %s --tgc-training-graph="fusion=none with-optimizer=false remat=layers" | FileCheck %s --check-prefix=LAYERS
// RUN: tgc-opt %s --tgc-training-graph="fusion=none with-optimizer=false remat=selective" | FileCheck %s --check-prefix=SELECTIVE
// RUN: tgc-opt %s --tgc-training-graph="fusion=none with-optimizer=false remat=budget memory-budget=2048" | FileCheck %s --check-prefix=BUDGET
// RUN: tgc-opt %s --tgc-training-graph="fusion=none with-optimizer=false remat=layers remat-report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// none: nothing is cloned; silu_grad reads the forward linear outputs.
// NONE-LABEL: func.func @train_step
// NONE-NOT: tg.recomputed
// NONE: %[[P0:.*]] = tg.linear {{.*}} {tg.layer = 0 : i64}
// NONE: %[[P1:.*]] = tg.linear {{.*}} {tg.layer = 1 : i64}
// NONE: tg.cross_entropy_grad
// NONE: tg.silu_grad %{{.*}}, %[[P1]]
// NONE: tg.silu_grad %{{.*}}, %[[P0]]

// layers: keep the embedding and each layer's output; layer 1's norm and
// projection are recomputed from h1 right before layer 1's backward, layer 0's
// from h0 after it, and the originals are no longer read there.
// LAYERS-LABEL: func.func @train_step
// LAYERS: %[[H0:.*]] = tg.embedding
// LAYERS: %[[P0:.*]] = tg.linear {{.*}} {tg.layer = 0 : i64}
// LAYERS: %[[H1:.*]] = tg.add %[[H0]], {{.*}} {tg.layer = 0 : i64}
// LAYERS: %[[P1:.*]] = tg.linear {{.*}} {tg.layer = 1 : i64}
// LAYERS: tg.cross_entropy_grad
// LAYERS: %[[N1R:.*]] = tg.rms_norm %[[H1]], %{{.*}} {eps = 1.000000e-05 : f64, tg.layer = 1 : i64, tg.recomputed}
// LAYERS-NEXT: %[[P1R:.*]] = tg.linear %[[N1R]], %{{.*}} {tg.layer = 1 : i64, tg.recomputed}
// LAYERS-NEXT: tg.silu_grad %{{.*}}, %[[P1R]]
// LAYERS: tg.rms_norm_grad %{{.*}}, %[[H1]]
// LAYERS: %[[N0R:.*]] = tg.rms_norm %[[H0]], %{{.*}} {eps = 1.000000e-05 : f64, tg.layer = 0 : i64, tg.recomputed}
// LAYERS-NEXT: %[[P0R:.*]] = tg.linear %[[N0R]], %{{.*}} {tg.layer = 0 : i64, tg.recomputed}
// LAYERS-NEXT: tg.silu_grad %{{.*}}, %[[P0R]]
// LAYERS-NOT: %[[P0]]{{[, ]}}
// LAYERS-NOT: %[[P1]]{{[, ]}}
// LAYERS: return

// selective: matmul outputs stay; norms are recomputed, linears never.
// SELECTIVE-LABEL: func.func @train_step
// SELECTIVE: %[[P1:.*]] = tg.linear {{.*}} {tg.layer = 1 : i64}
// SELECTIVE: tg.cross_entropy_grad
// SELECTIVE-NOT: tg.linear {{.*}}tg.recomputed
// SELECTIVE: tg.silu_grad %{{.*}}, %[[P1]]
// SELECTIVE-NOT: tg.linear {{.*}}tg.recomputed
// SELECTIVE: tg.rms_norm {{.*}}tg.recomputed
// SELECTIVE-NOT: tg.linear {{.*}}tg.recomputed
// SELECTIVE: return

// A budget of 2 KiB: recomputing the norms is enough (planned peak 2 KiB
// instead of 2.75 KiB); matmuls stay.
// BUDGET-LABEL: func.func @train_step
// BUDGET: tg.cross_entropy_grad
// BUDGET-NOT: tg.linear {{.*}}tg.recomputed
// BUDGET: tg.rms_norm {{.*}}tg.recomputed
// BUDGET-NOT: tg.linear {{.*}}tg.recomputed
// BUDGET: return

// REPORT: tg-remat: policy layers
// REPORT: keep {{.*}} embed (tg.embedding tensor<2x4x8xf32>): outside the transformer layers
// REPORT: recompute 256.00 B 1024 FLOPs layers.0.proj (tg.linear tensor<2x4x8xf32>): inside layer 0: recomputed from the layer's input
// REPORT: keep {{.*}} layers.0.residual (tg.add tensor<2x4x8xf32>): output of layer 0: input of the next layer's checkpoint
// REPORT: kept 1.25 KiB, recomputed 1.00 KiB, extra FLOPs 2560
// REPORT: planned peak 1.75 KiB (without rematerialisation 2.75 KiB)

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
  %a1 = tg.rms_norm %h1, %n1 {eps = 1.0e-5 : f64, tg.layer = 1 : i64} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32> loc("layers.1.norm")
  %p1 = tg.linear %a1, %w1 {tg.layer = 1 : i64} : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32> loc("layers.1.proj")
  %s1 = tg.silu %p1 {tg.layer = 1 : i64} : tensor<2x4x8xf32> loc("layers.1.act")
  %h2 = tg.add %h1, %s1 {tg.layer = 1 : i64} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("layers.1.residual")
  %l = tg.linear %h2, %head : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32> loc("head")
  %loss = tg.cross_entropy %l, %tgt : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}
