// Folders of the tg ops.
// RUN: tgc-opt %s --canonicalize --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @transpose_transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT: tg.transpose
// CHECK: return %[[X]]
func.func @transpose_transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = tg.transpose %x [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %1 = tg.transpose %0 [0, 2, 1] : tensor<2x4x3xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_transpose_compose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = tg.transpose %[[X]] [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_transpose_compose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = tg.transpose %x [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = tg.transpose %0 [2, 1, 0] : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  return %1 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-NOT: tg.transpose
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tg.transpose %x [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x12xf32>)
// CHECK-NEXT: %[[R:.*]] = tg.reshape %[[X]] : tensor<2x12xf32> -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_reshape(%x: tensor<2x12xf32>) -> tensor<4x6xf32> {
  %0 = tg.reshape %x : tensor<2x12xf32> -> tensor<24xf32>
  %1 = tg.reshape %0 : tensor<24xf32> -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_back_and_forth
// CHECK-NOT: tg.reshape
func.func @reshape_back_and_forth(%x: tensor<2x12xf32>) -> tensor<2x12xf32> {
  %0 = tg.reshape %x : tensor<2x12xf32> -> tensor<2x3x4xf32>
  %1 = tg.reshape %0 : tensor<2x3x4xf32> -> tensor<2x12xf32>
  return %1 : tensor<2x12xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_constant
// CHECK: tg.constant dense<{{\[}}[0, 1], [2, 3]]> : tensor<2x2xi32>
// CHECK-NOT: tg.reshape
func.func @reshape_constant() -> tensor<2x2xi32> {
  %c = tg.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %0 = tg.reshape %c : tensor<4xi32> -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
}

// -----

// CHECK-LABEL: func.func @scale_by_one
// CHECK-NOT: tg.scale
func.func @scale_by_one(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.scale %x {factor = 1.0 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @scale_scale
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: tg.scale %[[X]] {factor = 3.000000e+00 : f64}
// CHECK-NOT: tg.scale
// Chained scales combine into one: 4 * 0.25 * 3 = 3.
func.func @scale_scale(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.scale %x {factor = 4.0 : f64} : tensor<4xf32>
  %1 = tg.scale %0 {factor = 0.25 : f64} : tensor<4xf32>
  %2 = tg.scale %1 {factor = 3.0 : f64} : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @add_zero
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>)
// CHECK-NOT: tg.add
// CHECK: return %[[X]]
func.func @add_zero(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %z = tg.constant dense<0.0> : tensor<4xf32>
  %0 = tg.add %z, %x : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Adding zeros that broadcast the other operand changes its shape: kept.
// CHECK-LABEL: func.func @add_zero_broadcasting
// CHECK: tg.add
func.func @add_zero_broadcasting(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %z = tg.constant dense<0.0> : tensor<2x4xf32>
  %0 = tg.add %x, %z : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @mul_one_sub_zero
// CHECK-NOT: tg.mul
// CHECK-NOT: tg.sub
func.func @mul_one_sub_zero(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %one = tg.constant dense<1.0> : tensor<2x4xf32>
  %zero = tg.constant dense<0.0> : tensor<4xf32>
  %0 = tg.mul %x, %one : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  %1 = tg.sub %0, %zero : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_splat
// CHECK: tg.constant dense<2.000000e+00> : tensor<3x4xf32>
// CHECK-NOT: tg.broadcast
func.func @broadcast_splat() -> tensor<3x4xf32> {
  %c = tg.constant dense<2.0> : tensor<4xf32>
  %0 = tg.broadcast %c : tensor<4xf32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @noop_structure
// CHECK-NOT: tg.
func.func @noop_structure(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = tg.broadcast %x : tensor<2x4xf32> -> tensor<2x4xf32>
  %1 = tg.reduce_sum %0 [] : tensor<2x4xf32> -> tensor<2x4xf32>
  %2 = tg.slice %1 axis 1 start 0 size 4 : tensor<2x4xf32> -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// -----

// A cast to the same type is its operand; narrowing what was just widened
// restores the original exactly; widening what was narrowed does not (the
// rounding is the point).
// CHECK-LABEL: func.func @cast_folds
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>, %[[Y:.*]]: tensor<4xf32>)
// CHECK: %[[N:.*]] = tg.cast %[[Y]] : tensor<4xf32> -> tensor<4xbf16>
// CHECK: %[[W:.*]] = tg.cast %[[N]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK: return %[[X]], %[[Y]], %[[W]]
func.func @cast_folds(%x: tensor<4xbf16>, %y: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>) {
  %w = tg.cast %x : tensor<4xbf16> -> tensor<4xf32>
  %back = tg.cast %w : tensor<4xf32> -> tensor<4xbf16>
  %same = tg.cast %y : tensor<4xf32> -> tensor<4xf32>
  %n = tg.cast %y : tensor<4xf32> -> tensor<4xbf16>
  %nw = tg.cast %n : tensor<4xbf16> -> tensor<4xf32>
  return %back, %same, %nw : tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>
}
