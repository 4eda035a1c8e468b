// RUN: tgc-opt %s --convert-tg-to-linalg --canonicalize | FileCheck %s

// A soft cap c = 50 (Gemma 2's attn_logit_softcapping) caps each score tile
// after the scale and before the mask: c · tanh(scale · q·k / c). The
// backward recomputes the capped scores, keeps them beside P (P goes to a
// fresh tile instead of overwriting them), and scales dS by the cap's slope
// max(1 − (s / c)², 0), which is 0 where the mask made s −inf.

// CHECK-LABEL: func.func @softcap
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[CAP:.*]] = arith.constant 5.000000e+01 : f32
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// The forward's scores.
// CHECK: linalg.batch_matmul
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[RAW:.*]]: f32):
// CHECK-NEXT: %[[S:.*]] = arith.mulf %[[RAW]], %[[SCALE]]
// CHECK-NEXT: %[[X:.*]] = arith.divf %[[S]], %[[CAP]]
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[X]]
// CHECK-NEXT: %[[CAPPED:.*]] = arith.mulf %[[T]], %[[CAP]]
// CHECK: arith.select %{{.*}}, %[[NEGINF]], %[[CAPPED]]
// The backward: P = exp(s − logsumexp) into a fresh tile, reading the
// capped scores s; dS reads P, delta and s.
// CHECK: math.tanh
// CHECK: %[[PT:.*]] = tensor.empty() : tensor<1x16x8xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x16xf32>, tensor<1x16x8xf32>) outs(%[[PT]] : tensor<1x16x8xf32>)
// CHECK-NEXT: ^bb0(%[[LSE:.*]]: f32, %[[SC:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[SHIFT:.*]] = arith.subf %[[SC]], %[[LSE]]
// CHECK-NEXT: math.exp %[[SHIFT]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x16x8xf32>, tensor<1x16xf32>, tensor<1x16x8xf32>)
// CHECK-NEXT: ^bb0(%[[PI:.*]]: f32, %[[DELTA:.*]]: f32, %[[SI:.*]]: f32, %[[DP:.*]]: f32):
// CHECK-NEXT: %[[D0:.*]] = arith.subf %[[DP]], %[[DELTA]]
// CHECK-NEXT: %[[D1:.*]] = arith.mulf %[[PI]], %[[D0]]
// CHECK-NEXT: %[[D2:.*]] = arith.mulf %[[D1]], %[[SCALE]]
// CHECK-NEXT: %[[TB:.*]] = arith.divf %[[SI]], %[[CAP]]
// CHECK-NEXT: %[[TT:.*]] = arith.mulf %[[TB]], %[[TB]]
// CHECK-NEXT: %[[ONEMINUS:.*]] = arith.subf %[[ONE]], %[[TT]]
// CHECK-NEXT: %[[SLOPE:.*]] = arith.maximumf %[[ONEMINUS]], %[[ZERO]]
// CHECK-NEXT: arith.mulf %[[D2]], %[[SLOPE]]
func.func @softcap(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x1x4xf32>, %v: tensor<1x8x1x4xf32>, %do: tensor<1x8x2x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) {
  %o, %lse = tg.attention %q, %k, %v {causal, softcap = 5.0e+01 : f64} : tensor<1x8x2x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32> -> tensor<1x8x2x4xf32>, tensor<1x8x2xf32>
  %dq, %dk, %dv = tg.attention_grad %do, %q, %k, %v, %o, %lse {causal, softcap = 5.0e+01 : f64} : tensor<1x8x2x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x2xf32>
  return %o, %dq : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>
}
