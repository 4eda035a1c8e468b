// tg-narrow-frozen over several functions that share parameters by name
// (the generation program's @prefill and @decode): a weight is narrowed in
// every function or in none. Here "mixed.weight" is a product's weight in
// @a but also added elementwise in @b, so it stays f32 in both.
// RUN: tgc-opt %s --tg-narrow-frozen="element-type=bf16 functions=a,b" | FileCheck %s
// RUN: not tgc-opt %s --tg-narrow-frozen="element-type=bf16 functions=a,c" 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK-LABEL: func.func @a
// CHECK-SAME: tensor<8x8xbf16> {tg.frozen, tg.param = "w.weight"}
// CHECK-SAME: tensor<8x8xf32> {tg.frozen, tg.param = "mixed.weight"}
// CHECK: tg.cast
// CHECK-LABEL: func.func @b
// CHECK-SAME: tensor<8x8xbf16> {tg.frozen, tg.param = "w.weight"}
// CHECK-SAME: tensor<8x8xf32> {tg.frozen, tg.param = "mixed.weight"}
// MISSING: error: tg-narrow-frozen: no function @c
func.func @a(%w: tensor<8x8xf32> {tg.param = "w.weight", tg.frozen},
             %m: tensor<8x8xf32> {tg.param = "mixed.weight", tg.frozen},
             %x: tensor<2x8xf32> {tg.input = "x"}) -> tensor<2x8xf32> {
  %y = tg.linear %x, %w : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
  %z = tg.linear %y, %m : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
  return %z : tensor<2x8xf32>
}
func.func @b(%w: tensor<8x8xf32> {tg.param = "w.weight", tg.frozen},
             %m: tensor<8x8xf32> {tg.param = "mixed.weight", tg.frozen},
             %x: tensor<8x8xf32> {tg.input = "x"}) -> tensor<8x8xf32> {
  %y = tg.linear %x, %w : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %z = tg.add %y, %m : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  return %z : tensor<8x8xf32>
}
