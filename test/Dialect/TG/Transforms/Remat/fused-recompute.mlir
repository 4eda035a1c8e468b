// With fusion on, policy none still lets the backward kernels recompute the
// cheap values they can remake from what the reverse graph keeps anyway:
// SiLU(gate) and SiLU(gate)·up from the gate and up projections (which
// silu_grad and the product's gradient read), RMSNorm's output from the
// residual it normalises (which rms_norm_grad reads) and the embedding
// lookup from its table and ids. The projections themselves stay kept.
// RUN: tgc-opt %s --tgc-training-graph="fusion=default with-optimizer=false remat=none" | FileCheck %s
// RUN: tgc-opt %s --tgc-training-graph="fusion=none with-optimizer=false remat=none" | FileCheck %s --check-prefix=NONE
// RUN: tgc-opt %s --tgc-training-graph="fusion=default with-optimizer=false remat=none remat-report=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// CHECK-LABEL: func.func @train_step
// CHECK: %[[GATE:.*]] = tg.linear
// CHECK-NEXT: %[[UP:.*]] = tg.linear
// CHECK: tg.linear_cross_entropy
// CHECK: %[[S:.*]] = tg.silu %[[GATE]] {tg.recomputed}
// CHECK-NEXT: tg.mul %[[S]], %[[UP]] {tg.recomputed}
// CHECK: tg.silu_grad %{{.*}}, %[[GATE]]
// CHECK: %[[E:.*]] = tg.embedding {{.*}}tg.recomputed
// CHECK-NEXT: tg.rms_norm %[[E]], {{.*}}tg.recomputed
// CHECK: tg.rms_norm_grad %{{.*}}, %[[E]]

// NONE-LABEL: func.func @train_step
// NONE-NOT: tg.recomputed

// REPORT: recompute {{.*}} norm (tg.rms_norm tensor<2x4x8xf32>): cheap, from values kept anyway: recomputed in the fused backward kernels
// REPORT: keep {{.*}} mlp.gate (tg.linear tensor<2x4x24xf32>): policy none keeps every value the reverse graph reads
// REPORT: recompute {{.*}} mlp.act (tg.silu tensor<2x4x24xf32>): cheap, from values kept anyway
// REPORT: recompute {{.*}} mlp.act (tg.mul tensor<2x4x24xf32>): cheap, from values kept anyway
// REPORT: kept 2.75 KiB, recomputed 2.00 KiB

func.func @forward(%emb: tensor<32x8xf32> {tg.param = "embed"},
                   %n: tensor<8xf32> {tg.param = "norm"},
                   %wg: tensor<24x8xf32> {tg.param = "mlp.gate"},
                   %wu: tensor<24x8xf32> {tg.param = "mlp.up"},
                   %wd: tensor<8x24xf32> {tg.param = "mlp.down"},
                   %head: tensor<32x8xf32> {tg.param = "head"},
                   %ids: tensor<2x4xi32> {tg.input = "input_ids"},
                   %tgt: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %h0 = tg.embedding %emb, %ids : tensor<32x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32> loc("embed")
  %a = tg.rms_norm %h0, %n {eps = 1.0e-5 : f64} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32> loc("norm")
  %g = tg.linear %a, %wg : tensor<2x4x8xf32>, tensor<24x8xf32> -> tensor<2x4x24xf32> loc("mlp.gate")
  %u = tg.linear %a, %wu : tensor<2x4x8xf32>, tensor<24x8xf32> -> tensor<2x4x24xf32> loc("mlp.up")
  %s = tg.silu %g : tensor<2x4x24xf32> loc("mlp.act")
  %m = tg.mul %s, %u : tensor<2x4x24xf32>, tensor<2x4x24xf32> -> tensor<2x4x24xf32> loc("mlp.act")
  %d = tg.linear %m, %wd : tensor<2x4x24xf32>, tensor<8x24xf32> -> tensor<2x4x8xf32> loc("mlp.down")
  %h1 = tg.add %h0, %d : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("residual")
  %l = tg.linear %h1, %head : tensor<2x4x8xf32>, tensor<32x8xf32> -> tensor<2x4x32xf32> loc("head")
  %loss = tg.cross_entropy %l, %tgt : tensor<2x4x32xf32>, tensor<2x4xi32> -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}
