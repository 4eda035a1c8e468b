// RoPE lowers to one linalg.generic reading constant cos/sin tables of
// (position, column); each element pairs with the one half the rotated width
// away. With rotary_dims R < D the columns past R read cos 1 and sin 0 and
// pass through unchanged.
// RUN: tgc-opt %s --convert-tg-to-linalg --split-input-file | FileCheck %s

// theta 10^4 over R = 4 of D = 6: frequencies 1 and 10^-2 (angles 1 and
// 0.01 at position 1).
// CHECK-LABEL: func.func @rope_partial
// CHECK: arith.constant dense<{{\[}}[1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00], [0.540302277, 0.999949991, 0.540302277, 0.999949991, 1.000000e+00, 1.000000e+00]]> : tensor<2x6xf32>
// CHECK: arith.constant dense<{{\[}}[0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [0.841470957, 0.00999983306, 0.841470957, 0.00999983306, 0.000000e+00, 0.000000e+00]]> : tensor<2x6xf32>
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 3
// CHECK: %[[HALF:.*]] = arith.constant 2 : index
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %[[I]], %[[HALF]]
// CHECK: arith.select %[[FIRST]]
func.func @rope_partial(%x: tensor<1x2x1x6xf32>) -> tensor<1x2x1x6xf32> {
  %y = tg.rope %x {rotary_dims = 4 : i64} : tensor<1x2x1x6xf32>
  return %y : tensor<1x2x1x6xf32>
}

// -----

// The whole head: frequencies 1 and 10^-2 over D = 4, pairs (0, 2), (1, 3).
// CHECK-LABEL: func.func @rope_whole
// CHECK: arith.constant dense<{{\[}}[1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00], [0.540302277, 0.999949991, 0.540302277, 0.999949991]]> : tensor<2x4xf32>
func.func @rope_whole(%x: tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32> {
  %y = tg.rope %x : tensor<1x2x1x4xf32>
  return %y : tensor<1x2x1x4xf32>
}
