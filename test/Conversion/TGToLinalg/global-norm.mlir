// The global norm of many parameters: tg.sum_squares per gradient, then
// their sums added in groups of at most 32 (a GPU kernel's parameters stay
// under PTX's 4 KiB), which elementwise fusion does not merge back.
// RUN: tgc-opt %s --convert-tg-to-linalg | FileCheck %s
// RUN: tgc-opt %s --convert-tg-to-linalg --tgc-fuse-elementwise | FileCheck %s --check-prefix=FUSED

// CHECK-LABEL: func.func @norm_of_40
// The first group: 32 sums.
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%arg0, {{.*}}, %arg31 : {{.*}}) outs(%{{.*}} : tensor<f64>)
// The second group: 8 sums.
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%arg32, {{.*}}, %arg39 : {{.*}}) outs(%{{.*}} : tensor<f64>)
// CHECK: linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<f64>, tensor<f64>) outs(%{{.*}} : tensor<f32>)
// CHECK: math.sqrt
// Fusion may merge a group into the last op, never all 40 sums into one.
// FUSED-LABEL: func.func @norm_of_40
// FUSED-NOT: ins(%arg0, {{.*}}, %arg39 :
// FUSED: math.sqrt
func.func @norm_of_40(%s0: tensor<f64>, %s1: tensor<f64>, %s2: tensor<f64>, %s3: tensor<f64>, %s4: tensor<f64>, %s5: tensor<f64>, %s6: tensor<f64>, %s7: tensor<f64>, %s8: tensor<f64>, %s9: tensor<f64>, %s10: tensor<f64>, %s11: tensor<f64>, %s12: tensor<f64>, %s13: tensor<f64>, %s14: tensor<f64>, %s15: tensor<f64>, %s16: tensor<f64>, %s17: tensor<f64>, %s18: tensor<f64>, %s19: tensor<f64>, %s20: tensor<f64>, %s21: tensor<f64>, %s22: tensor<f64>, %s23: tensor<f64>, %s24: tensor<f64>, %s25: tensor<f64>, %s26: tensor<f64>, %s27: tensor<f64>, %s28: tensor<f64>, %s29: tensor<f64>, %s30: tensor<f64>, %s31: tensor<f64>, %s32: tensor<f64>, %s33: tensor<f64>, %s34: tensor<f64>, %s35: tensor<f64>, %s36: tensor<f64>, %s37: tensor<f64>, %s38: tensor<f64>, %s39: tensor<f64>) -> tensor<f32> {
  %n = tg.global_norm %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7, %s8, %s9, %s10, %s11, %s12, %s13, %s14, %s15, %s16, %s17, %s18, %s19, %s20, %s21, %s22, %s23, %s24, %s25, %s26, %s27, %s28, %s29, %s30, %s31, %s32, %s33, %s34, %s35, %s36, %s37, %s38, %s39 : tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>, tensor<f64>
  return %n : tensor<f32>
}
