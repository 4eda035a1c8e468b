// RUN: tgc-opt %s --tgc-cpu-choose-tiles="score-tile-bytes=8192 task-bytes=0" --convert-tg-to-linalg --canonicalize | FileCheck %s

// A decode step: one token of G = 2 query heads per key/value head against
// a cache of 16 positions. Every query scores the whole cache (no key
// tiles), hiding keys after its position (read from %pos) and, with the
// window, at or before its position − 4.

// CHECK-LABEL: func.func @decode_attention
// CHECK-NOT: scf.for
// CHECK: linalg.batch_matmul {{.*}} -> tensor<2x2x16xf32>
// CHECK: linalg.generic
// CHECK: %[[AT:.*]] = tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<1x1xi32>
// CHECK: %[[POS:.*]] = arith.index_cast %[[AT]]
// CHECK: arith.cmpi sgt, %{{.*}}, %[[POS]]
// CHECK: arith.cmpi sle, %{{.*}}, %[[POS]]
// CHECK: arith.select
// CHECK: linalg.batch_matmul {{.*}} -> tensor<2x2x8xf32>
func.func @decode_attention(%q: tensor<1x1x4x8xf32>, %kc: tensor<1x16x2x8xf32>,
                            %vc: tensor<1x16x2x8xf32>, %pos: tensor<1x1xi32>)
    -> tensor<1x1x4x8xf32> {
  %o, %lse = tg.attention %q, %kc, %vc at %pos {causal, window = 4 : i64} : tensor<1x1x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x1xi32> -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>
  return %o : tensor<1x1x4x8xf32>
}

// RoPE at positions: cos/sin tables of max_position rows, each token
// reading the row of its (clamped) position.
// CHECK-LABEL: func.func @decode_rope
// CHECK-DAG: arith.constant dense<{{.*}}> : tensor<16x8xf32>
// CHECK: linalg.generic
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<1x1xi32>
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<16x8xf32>
func.func @decode_rope(%q: tensor<1x1x4x8xf32>, %pos: tensor<1x1xi32>)
    -> tensor<1x1x4x8xf32> {
  %r = tg.rope %q at %pos {max_position = 16 : i64} : tensor<1x1x4x8xf32>, tensor<1x1xi32>
  return %r : tensor<1x1x4x8xf32>
}

// The cache written row by row in place: a loop over the B·S rows, each
// inserted at its clamped position.
// CHECK-LABEL: func.func @cache_update
// CHECK: scf.for %{{.*}} = %c0 to %c6 step %c1 iter_args(%[[C:.*]] = %{{.*}}) -> (tensor<2x16x2x8xf32>)
// CHECK: tensor.extract %{{.*}} : tensor<2x3xi32>
// CHECK: %[[ROW:.*]] = tensor.extract_slice %{{.*}} [1, 1, 2, 8] [1, 1, 1, 1] : tensor<2x3x2x8xf32> to tensor<1x1x2x8xf32>
// CHECK: tensor.insert_slice %[[ROW]] into %[[C]]
func.func @cache_update(%kc: tensor<2x16x2x8xf32>, %k: tensor<2x3x2x8xf32>,
                        %pos: tensor<2x3xi32>) -> tensor<2x16x2x8xf32> {
  %c = tg.cache_update %kc, %k at %pos : tensor<2x16x2x8xf32>, tensor<2x3x2x8xf32>, tensor<2x3xi32>
  return %c : tensor<2x16x2x8xf32>
}
