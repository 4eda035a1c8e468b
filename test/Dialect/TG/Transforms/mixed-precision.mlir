// tg-mixed-precision: products on bf16 operands with f32 results, one cast
// per value (before its first product, in that product's layer; casts of
// arguments recomputed in the backward rather than saved), nothing else
// touched; then the reverse graph the products' and casts' gradient
// rules build.
// RUN: tgc-opt %s --tg-mixed-precision --split-input-file | FileCheck %s
// RUN: tgc-opt %s --tg-mixed-precision --tg-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: tgc-opt %s --tg-mixed-precision=element-type=f16 --split-input-file | FileCheck %s --check-prefix=F16
// RUN: not tgc-opt %s --tg-mixed-precision=element-type=f8 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: for the --element-type option: Cannot find option named 'f8'!
// RUN: tgc-opt %s --tg-mixed-precision=element-type=none --split-input-file | FileCheck %s --check-prefix=NONE
// NONE-NOT: tg.cast

// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[W:.*]]: tensor<16x8xf32> {tg.param = "w"}, %[[V:.*]]: tensor<4x16xf32> {tg.param = "v"}, %[[B:.*]]: tensor<4xf32> {tg.param = "b"}, %[[X:.*]]: tensor<2x8xf32> {tg.input = "x"}, %[[Y:.*]]: tensor<2xi32> {tg.input = "y"})
// CHECK: %[[XL:.*]] = tg.cast %[[X]] {tg.layer = 0 : i64, tg.remat = "recompute"} : tensor<2x8xf32> -> tensor<2x8xbf16>
// CHECK: %[[WL:.*]] = tg.cast %[[W]] {tg.layer = 0 : i64, tg.remat = "recompute"} : tensor<16x8xf32> -> tensor<16x8xbf16>
// CHECK: %[[H:.*]] = tg.linear %[[XL]], %[[WL]] {tg.layer = 0 : i64} : tensor<2x8xbf16>, tensor<16x8xbf16> -> tensor<2x16xf32>
// CHECK: %[[A:.*]] = tg.silu %[[H]] : tensor<2x16xf32>
// CHECK: %[[AL:.*]] = tg.cast %[[A]] {tg.layer = 1 : i64} : tensor<2x16xf32> -> tensor<2x16xbf16>
// CHECK: %[[VL:.*]] = tg.cast %[[V]] {tg.layer = 1 : i64, tg.remat = "recompute"} : tensor<4x16xf32> -> tensor<4x16xbf16>
// CHECK: %[[BL:.*]] = tg.cast %[[B]] {tg.layer = 1 : i64, tg.remat = "recompute"} : tensor<4xf32> -> tensor<4xbf16>
// CHECK: %[[L:.*]] = tg.linear %[[AL]], %[[VL]], %[[BL]] {tg.layer = 1 : i64} : tensor<2x16xbf16>, tensor<4x16xbf16>, tensor<4xbf16> -> tensor<2x4xf32>
// The same input's second product reuses its cast.
// CHECK-NOT: tg.cast %[[X]]
// CHECK: tg.matmul %[[XL]], %[[WL]] {transpose_rhs} : tensor<2x8xbf16>, tensor<16x8xbf16> -> tensor<2x16xf32>
// CHECK: tg.cross_entropy %[[L]], %[[Y]] : tensor<2x4xf32>
// F16: tg.linear {{.*}} : tensor<2x8xf16>, tensor<16x8xf16> -> tensor<2x16xf32>

// GRAD-LABEL: func.func @train_step
// The upstream gradient enters the product in bf16; each operand's gradient
// is accumulated in f32, rounded to bf16 once, and widened by the cast's rule.
// GRAD: %[[DL:.*]] = tg.cross_entropy_grad
// GRAD: %[[DLL:.*]] = tg.cast %[[DL]] : tensor<2x4xf32> -> tensor<2x4xbf16>
// GRAD: %[[DA:.*]] = tg.matmul %[[DLL]], %{{.*}} : tensor<2x4xbf16>, tensor<4x16xbf16> -> tensor<2x16xf32>
// GRAD: %[[DAL:.*]] = tg.cast %[[DA]] : tensor<2x16xf32> -> tensor<2x16xbf16>
// GRAD: %[[DV:.*]] = tg.matmul %[[DLL]], %{{.*}} {transpose_lhs} : tensor<2x4xbf16>, tensor<2x16xbf16> -> tensor<4x16xf32>
// GRAD: %[[DVL:.*]] = tg.cast %[[DV]] : tensor<4x16xf32> -> tensor<4x16xbf16>
// The bias gradient sums the f32 upstream gradient.
// GRAD: %[[DB:.*]] = tg.reduce_sum %[[DL]] {{.*}} : tensor<2x4xf32> -> tensor<4xf32>
// GRAD: tg.cast %[[DB]] : tensor<4xf32> -> tensor<4xbf16>
// GRAD: tg.cast %[[DVL]] : tensor<4x16xbf16> -> tensor<4x16xf32>
// GRAD: tg.cast %[[DAL]] : tensor<2x16xbf16> -> tensor<2x16xf32>
func.func @forward(%w: tensor<16x8xf32> {tg.param = "w"},
                   %v: tensor<4x16xf32> {tg.param = "v"},
                   %b: tensor<4xf32> {tg.param = "b"},
                   %x: tensor<2x8xf32> {tg.input = "x"},
                   %y: tensor<2xi32> {tg.input = "y"}) -> tensor<f32> {
  %h = tg.linear %x, %w {tg.layer = 0 : i64} : tensor<2x8xf32>, tensor<16x8xf32> -> tensor<2x16xf32>
  %a = tg.silu %h : tensor<2x16xf32>
  %l = tg.linear %a, %v, %b {tg.layer = 1 : i64} : tensor<2x16xf32>, tensor<4x16xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %h2 = tg.matmul %x, %w {transpose_rhs} : tensor<2x8xf32>, tensor<16x8xf32> -> tensor<2x16xf32>
  %s = tg.reduce_sum %h2 [0, 1] : tensor<2x16xf32> -> tensor<f32>
  %loss = tg.cross_entropy %l, %y : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  %t = tg.add %loss, %s : tensor<f32>, tensor<f32> -> tensor<f32>
  return %t : tensor<f32>
}

// -----

// Products already in low precision, or in f64, are left alone.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: tg.cast
// CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<2x8xbf16>, tensor<8x4xbf16> -> tensor<2x4xf32>
// CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<2x8xf64>, tensor<8x4xf64> -> tensor<2x4xf64>
func.func @untouched(%a: tensor<2x8xbf16>, %b: tensor<8x4xbf16>, %c: tensor<2x8xf64>, %d: tensor<8x4xf64>) -> (tensor<2x4xf32>, tensor<2x4xf64>) {
  %0 = tg.matmul %a, %b : tensor<2x8xbf16>, tensor<8x4xbf16> -> tensor<2x4xf32>
  %1 = tg.matmul %c, %d : tensor<2x8xf64>, tensor<8x4xf64> -> tensor<2x4xf64>
  return %0, %1 : tensor<2x4xf32>, tensor<2x4xf64>
}

