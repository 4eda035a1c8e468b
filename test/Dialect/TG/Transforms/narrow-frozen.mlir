// tg-narrow-frozen stores the frozen weight matrices that only products
// read in bf16 and casts those products' other operands: not the embedding
// table (also a gather), not a frozen bias, not the output layer, not a
// trainable weight.
// RUN: tgc-opt %s --tg-narrow-frozen=element-type=bf16 | FileCheck %s
// RUN: tgc-opt %s --tg-narrow-frozen | FileCheck %s --check-prefix=OFF
// RUN: not tgc-opt %s --tg-narrow-frozen=element-type=f8 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tgc-opt %s --tgc-training-graph='frozen-dtype=bf16' | FileCheck %s --check-prefix=STEP

// CHECK-LABEL: func.func @forward
// CHECK-SAME: tensor<16x8xf32> {tg.frozen, tg.param = "embed.weight"}
// CHECK-SAME: %[[WQ:[^:]*]]: tensor<8x8xbf16> {tg.frozen, tg.param = "layers.0.q_proj.weight"}
// CHECK-SAME: %[[WK:[^:]*]]: tensor<8x8xbf16> {tg.frozen, tg.param = "layers.0.k_proj.weight"}
// CHECK-SAME: tensor<8x8xf32> {tg.param = "layers.0.o_proj.weight"}
// CHECK-SAME: tensor<8xf32> {tg.frozen, tg.param = "layers.0.o_proj.bias"}
// CHECK-SAME: tensor<16x8xf32> {tg.frozen, tg.param = "lm_head.weight"}
// CHECK: %[[X:.*]] = tg.embedding
// One cast of the input, shared by both products.
// CHECK-NEXT: %[[XL:.*]] = tg.cast %[[X]] {tg.layer = 0 : i64} : tensor<3x8xf32> -> tensor<3x8xbf16>
// CHECK-NEXT: tg.linear %[[XL]], %[[WQ]] {tg.layer = 0 : i64} : tensor<3x8xbf16>, tensor<8x8xbf16> -> tensor<3x8xf32>
// CHECK-NEXT: tg.linear %[[XL]], %[[WK]] {tg.layer = 0 : i64} : tensor<3x8xbf16>, tensor<8x8xbf16> -> tensor<3x8xf32>
// CHECK-NOT: tg.cast
// CHECK: tg.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<3x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
// CHECK: tg.linear %{{.*}}, %{{.*}} : tensor<3x8xf32>, tensor<16x8xf32> -> tensor<3x16xf32>

// OFF-NOT: bf16
// BAD: for the --element-type option: Cannot find option named 'f8'!

// The step reads the narrow weights as they are: no cast of them, no
// gradient or state for them.
// STEP-LABEL: func.func @train_step
// STEP-SAME: tensor<8x8xbf16> {tg.frozen, tg.param = "layers.0.q_proj.weight"}
// STEP-NOT: tg.cast %arg1
// STEP: return
func.func @forward(%e: tensor<16x8xf32> {tg.param = "embed.weight", tg.frozen},
                   %wq: tensor<8x8xf32> {tg.param = "layers.0.q_proj.weight", tg.frozen},
                   %wk: tensor<8x8xf32> {tg.param = "layers.0.k_proj.weight", tg.frozen},
                   %wo: tensor<8x8xf32> {tg.param = "layers.0.o_proj.weight"},
                   %bo: tensor<8xf32> {tg.param = "layers.0.o_proj.bias", tg.frozen},
                   %head: tensor<16x8xf32> {tg.param = "lm_head.weight", tg.frozen},
                   %ids: tensor<3xi32> {tg.input = "input_ids"},
                   %t: tensor<3xi32> {tg.input = "targets"}) -> tensor<f32> {
  %x = tg.embedding %e, %ids : tensor<16x8xf32>, tensor<3xi32> -> tensor<3x8xf32>
  %q = tg.linear %x, %wq {tg.layer = 0 : i64} : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
  %k = tg.linear %x, %wk {tg.layer = 0 : i64} : tensor<3x8xf32>, tensor<8x8xf32> -> tensor<3x8xf32>
  %s = tg.add %q, %k : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
  %r = tg.relu %s : tensor<3x8xf32>
  %o = tg.linear %r, %wo, %bo : tensor<3x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
  %logits = tg.linear %o, %head : tensor<3x8xf32>, tensor<16x8xf32> -> tensor<3x16xf32>
  %loss = tg.cross_entropy %logits, %t : tensor<3x16xf32>, tensor<3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
