// tg-lora on GPT-2's Conv1D: W [in, out] read by tg.matmul (PEFT's
// fan_in_fan_out); the adapters keep nn.Linear's shapes.
// RUN: tgc-opt %s --tg-lora='rank=2 alpha=8 targets=c_attn' | FileCheck %s
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x24xf32> {tg.frozen, tg.param = "h.0.attn.c_attn.weight"}
// CHECK-SAME: %[[A:[^:]*]]: tensor<2x8xf32> {tg.param = "h.0.attn.c_attn.lora_A.weight"}
// CHECK-SAME: %[[B:[^:]*]]: tensor<24x2xf32> {tg.param = "h.0.attn.c_attn.lora_B.weight"}
// CHECK: %[[Y:.*]] = tg.matmul %[[X:[^,]*]], %[[W]]
// CHECK: %[[D:.*]] = tg.linear %[[X]], %[[A]]
// CHECK: %[[S:.*]] = tg.scale %[[D]]
// CHECK: %[[U:.*]] = tg.linear %[[S]], %[[B]] : tensor<3x2xf32>, tensor<24x2xf32> -> tensor<3x24xf32>
// CHECK: %[[Z:.*]] = tg.add %[[Y]], %[[U]]
// CHECK: tg.add %[[Z]], %{{.*}} : tensor<3x24xf32>, tensor<24xf32>
func.func @forward(%w: tensor<8x24xf32> {tg.param = "h.0.attn.c_attn.weight"},
                   %b: tensor<24xf32> {tg.param = "h.0.attn.c_attn.bias"},
                   %x: tensor<3x8xf32> {tg.input = "features"},
                   %t: tensor<3xi32> {tg.input = "labels"}) -> tensor<f32> {
  %y = tg.matmul %x, %w : tensor<3x8xf32>, tensor<8x24xf32> -> tensor<3x24xf32>
  %yb = tg.add %y, %b : tensor<3x24xf32>, tensor<24xf32> -> tensor<3x24xf32>
  %loss = tg.cross_entropy %yb, %t : tensor<3x24xf32>, tensor<3xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
