// Round trip of every tg op: parse, print, parse again; and once more through
// the generic form.
// RUN: tgc-opt %s | tgc-opt | FileCheck %s
// RUN: tgc-opt %s --mlir-print-op-generic | tgc-opt | FileCheck %s

// CHECK-LABEL: func.func @structure
// CHECK-SAME: {tg.param = "model.embed_tokens.weight"}
// CHECK-SAME: {tg.input = "input_ids"}
func.func @structure(%w: tensor<16x8xf32> {tg.param = "model.embed_tokens.weight"},
                     %ids: tensor<2x4xi32> {tg.input = "input_ids"},
                     %x: tensor<2x4x8xf32>, %b: tensor<8xf32>) {
  // CHECK: tg.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  %c = tg.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
  // CHECK: tg.reshape %{{.*}} : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %r = tg.reshape %x : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  // CHECK: tg.transpose %{{.*}} [0, 2, 1, 3] : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  %t = tg.transpose %r [0, 2, 1, 3] : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
  // CHECK: tg.broadcast %{{.*}} : tensor<8xf32> -> tensor<2x4x8xf32>
  %bb = tg.broadcast %b : tensor<8xf32> -> tensor<2x4x8xf32>
  // CHECK: tg.reduce_sum %{{.*}} [0, 1] : tensor<2x4x8xf32> -> tensor<8xf32>
  %s = tg.reduce_sum %x [0, 1] : tensor<2x4x8xf32> -> tensor<8xf32>
  // CHECK: tg.reduce_sum %{{.*}} [2] {keep_dims} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %sk = tg.reduce_sum %x [2] {keep_dims} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  // CHECK: tg.slice %{{.*}} axis 2 start 4 size 4 : tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  %sl = tg.slice %x axis 2 start 4 size 4 : tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  return
}

// CHECK-LABEL: func.func @math
func.func @math(%x: tensor<2x4x8xf32>, %w: tensor<6x8xf32>, %b: tensor<6xf32>,
                %m: tensor<8x3xf32>, %h: tensor<2x4x8xbf16>, %d: tensor<3x5xf64>) {
  // CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<8x3xf32> -> tensor<2x4x3xf32>
  %mm = tg.matmul %x, %m : tensor<2x4x8xf32>, tensor<8x3xf32> -> tensor<2x4x3xf32>
  // CHECK: tg.matmul %{{.*}}, %{{.*}} {transpose_rhs} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  %qk = tg.matmul %x, %x {transpose_rhs} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  // CHECK: tg.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
  %tl = tg.matmul %x, %x {transpose_lhs} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
  // CHECK: tg.linear %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<6x8xf32> -> tensor<2x4x6xf32>
  %l = tg.linear %x, %w : tensor<2x4x8xf32>, tensor<6x8xf32> -> tensor<2x4x6xf32>
  // CHECK: tg.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<6x8xf32>, tensor<6xf32> -> tensor<2x4x6xf32>
  %lb = tg.linear %x, %w, %b : tensor<2x4x8xf32>, tensor<6x8xf32>, tensor<6xf32> -> tensor<2x4x6xf32>
  // CHECK: tg.add %{{.*}}, %{{.*}} : tensor<2x4x6xf32>, tensor<6xf32> -> tensor<2x4x6xf32>
  %a = tg.add %l, %b : tensor<2x4x6xf32>, tensor<6xf32> -> tensor<2x4x6xf32>
  // CHECK: tg.sub %{{.*}}, %{{.*}} : tensor<2x4x6xf32>, tensor<2x4x6xf32> -> tensor<2x4x6xf32>
  %sb = tg.sub %a, %l : tensor<2x4x6xf32>, tensor<2x4x6xf32> -> tensor<2x4x6xf32>
  // CHECK: tg.mul %{{.*}}, %{{.*}} : tensor<2x4x6xf32>, tensor<2x1x6xf32> -> tensor<2x4x6xf32>
  %one = tg.constant dense<2.0> : tensor<2x1x6xf32>
  %mu = tg.mul %sb, %one : tensor<2x4x6xf32>, tensor<2x1x6xf32> -> tensor<2x4x6xf32>
  // CHECK: tg.scale %{{.*}} {factor = 5.000000e-01 : f64} : tensor<2x4x6xf32>
  %sc = tg.scale %mu {factor = 0.5 : f64} : tensor<2x4x6xf32>
  // CHECK: tg.relu %{{.*}} : tensor<2x4x6xf32>
  %re = tg.relu %sc : tensor<2x4x6xf32>
  // CHECK: tg.gelu %{{.*}} : tensor<2x4x6xf32>
  %ge = tg.gelu %re : tensor<2x4x6xf32>
  // CHECK: tg.gelu %{{.*}} {approximate = "tanh"} : tensor<2x4x8xbf16>
  %gt = tg.gelu %h {approximate = "tanh"} : tensor<2x4x8xbf16>
  // CHECK: tg.silu %{{.*}} : tensor<3x5xf64>
  %si = tg.silu %d : tensor<3x5xf64>
  // CHECK: tg.softmax %{{.*}} axis -1 : tensor<2x4x4xf32>
  %sm = tg.softmax %qk axis -1 : tensor<2x4x4xf32>
  return
}

// CHECK-LABEL: func.func @transformer
func.func @transformer(%table: tensor<32x16xf32>, %ids: tensor<2x8xi64>,
                       %g: tensor<16xf32>, %beta: tensor<16xf32>,
                       %q: tensor<2x8x4x4xf32>, %kv: tensor<2x8x2x4xf32>,
                       %odd: tensor<2x8x2x5xf32>,
                       %logits: tensor<2x8x32xf32>, %targets: tensor<2x8xi64>) -> tensor<f32> {
  // CHECK: tg.embedding %{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  %e = tg.embedding %table, %ids : tensor<32x16xf32>, tensor<2x8xi64> -> tensor<2x8x16xf32>
  // CHECK: tg.rms_norm %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f64} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %n = tg.rms_norm %e, %g {eps = 1.0e-5 : f64} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  // CHECK: tg.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %ln = tg.layer_norm %e, %g, %beta : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  // CHECK: tg.layer_norm %{{.*}}, %{{.*}} {eps = 1.250000e-01 : f64} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  %ln2 = tg.layer_norm %e, %g {eps = 0.125 : f64} : tensor<2x8x16xf32>, tensor<16xf32> -> tensor<2x8x16xf32>
  // CHECK: tg.rope %{{.*}} {theta = 5.000000e+05 : f64} : tensor<2x8x4x4xf32>
  %r = tg.rope %q {theta = 500000.0 : f64} : tensor<2x8x4x4xf32>
  // CHECK: tg.rope %{{.*}} : tensor<2x8x2x4xf32>
  %rk = tg.rope %kv : tensor<2x8x2x4xf32>
  // CHECK: tg.rope %{{.*}} {frequencies = array<f64: 1.000000e+00, 2.500000e-02>} : tensor<2x8x2x4xf32>
  %rf = tg.rope %kv {frequencies = array<f64: 1.0, 0.025>} : tensor<2x8x2x4xf32>
  // An odd head dimension with an even rotated part.
  // CHECK: tg.rope %{{.*}} {rotary_dims = 2 : i64} : tensor<2x8x2x5xf32>
  %rp = tg.rope %odd {rotary_dims = 2 : i64} : tensor<2x8x2x5xf32>
  // CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {causal} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  %a, %a_lse = tg.attention %r, %rk, %kv {causal} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  // CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, window = 3 : i64} : tensor<2x8x4x4xf32>
  %aw, %aw_lse = tg.attention %r, %rk, %kv {causal, window = 3} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  // CHECK: tg.attention_grad {{.*}} {causal, window = 3 : i64} : tensor<2x8x4x4xf32>
  %dqw, %dkw, %dvw = tg.attention_grad %aw, %r, %rk, %kv, %aw, %aw_lse {causal, window = 3} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x4xf32>
  // CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64} : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  %a2, %a2_lse = tg.attention %q, %q, %q {scale = 0.125 : f64} : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  // CHECK: tg.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x4xf32>
  %dq, %dk, %dv = tg.attention_grad %a, %r, %rk, %kv, %a, %a_lse {causal} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x4xf32>
  // CHECK: tg.cross_entropy %{{.*}}, %{{.*}} {ignore_index = -100 : i64} : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>
  %l = tg.cross_entropy %logits, %targets {ignore_index = -100 : i64} : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// CHECK-LABEL: func.func @optimizer_and_communication
func.func @optimizer_and_communication(%w: tensor<4x8xf32>, %b: tensor<4xf32>, %dp: tensor<f32>, %lr: tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>) {
  // CHECK: %[[S:.*]]:2, %[[R:.*]] = tg.all_reduce_start(%{{.*}}, %{{.*}}) weight %{{.*}} : tensor<4x8xf32>, tensor<4xf32>
  %s:2, %r = tg.all_reduce_start(%w, %b) weight %dp : tensor<4x8xf32>, tensor<4xf32>
  // CHECK: %[[G:.*]]:2 = tg.collective_wait %[[R]](%[[S]]#0, %[[S]]#1) : tensor<4x8xf32>, tensor<4xf32>
  %g:2 = tg.collective_wait %r(%s#0, %s#1) : tensor<4x8xf32>, tensor<4xf32>
  // CHECK: tg.sum_squares %{{.*}} : tensor<4x8xf32>
  %sw = tg.sum_squares %g#0 : tensor<4x8xf32>
  %sb = tg.sum_squares %g#1 : tensor<4xf32>
  // CHECK: tg.global_norm %{{.*}}, %{{.*}} : tensor<f64>, tensor<f64>
  %n = tg.global_norm %sw, %sb : tensor<f64>, tensor<f64>
  %p = tg.sgd_update %w, %g#0, %lr : tensor<4x8xf32>
  return %n, %p : tensor<f32>, tensor<4x8xf32>
}

// Loss scaling: the overflow check and the next scale; updates skip.
// CHECK-LABEL: func.func @loss_scaling
// CHECK: %{{.*}}, %[[SKIP:.*]], %{{.*}}, %{{.*}} = tg.loss_scale_update %{{.*}}, %{{.*}}, %{{.*}} {growth_interval = 2000 : i64} : tensor<f32>
// CHECK: tg.sgd_update %{{.*}}, %{{.*}}, %{{.*}} skip %[[SKIP]] : tensor<4xf32>
func.func @loss_scaling(%s: tensor<f32>, %t: tensor<f32>, %n: tensor<f32>, %p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) -> (tensor<4xf32>, tensor<f32>, tensor<f32>) {
  %inv, %skip, %s1, %t1 = tg.loss_scale_update %s, %t, %n {growth_interval = 2000 : i64} : tensor<f32>
  %p1 = tg.sgd_update %p, %g, %lr skip %skip : tensor<4xf32>
  return %p1, %s1, %t1 : tensor<4xf32>, tensor<f32>, tensor<f32>
}

// The update guard without loss scaling: 1 when the norm is not finite.
// CHECK-LABEL: func.func @guarded_update
// CHECK: %[[SKIP:.*]] = tg.not_finite %{{.*}} : tensor<f32>
// CHECK: tg.sgd_update %{{.*}}, %{{.*}}, %{{.*}} skip %[[SKIP]] : tensor<4xf32>
func.func @guarded_update(%n: tensor<f32>, %p: tensor<4xf32>, %g: tensor<4xf32>, %lr: tensor<f32>) -> tensor<4xf32> {
  %skip = tg.not_finite %n : tensor<f32>
  %p1 = tg.sgd_update %p, %g, %lr skip %skip : tensor<4xf32>
  return %p1 : tensor<4xf32>
}

// ZeRO-1: gradients reduce-scattered into shards of ceil(numel / 3)
// elements, the parameter's shard updated and all-gathered back.
// CHECK-LABEL: func.func @zero_shards
// CHECK: %[[G:.*]]:2, %[[S:.*]]:2, %[[R:.*]] = tg.reduce_scatter_start(%{{.*}}, %{{.*}}) weight %{{.*}} over 3 : tensor<4x8xf32>, tensor<4xf32>
// CHECK: %[[D:.*]]:4 = tg.collective_wait %[[R]](%[[G]]#0, %[[G]]#1, %[[S]]#0, %[[S]]#1) : tensor<4x8xf32>, tensor<4xf32>, tensor<11xf32>, tensor<2xf32>
// CHECK: %[[T:.*]]:2 = tg.sum_over_processes(%{{.*}}, %{{.*}}) : tensor<f64>, tensor<f64>
// CHECK: %[[P:.*]] = tg.shard %{{.*}} over 3 : tensor<4x8xf32>
// CHECK: tg.all_gather_start(%{{.*}}) into(%{{.*}}) over 3 : tensor<11xf32> into tensor<4x8xf32>
func.func @zero_shards(%w: tensor<4x8xf32>, %b: tensor<4xf32>, %dp: tensor<f32>, %lr: tensor<f32>) -> (tensor<f32>, tensor<4x8xf32>) {
  %g:2, %s:2, %r = tg.reduce_scatter_start(%w, %b) weight %dp over 3 : tensor<4x8xf32>, tensor<4xf32>
  %d:4 = tg.collective_wait %r(%g#0, %g#1, %s#0, %s#1) : tensor<4x8xf32>, tensor<4xf32>, tensor<11xf32>, tensor<2xf32>
  %sw = tg.sum_squares %d#2 : tensor<11xf32>
  %sb = tg.sum_squares %d#3 : tensor<2xf32>
  %t:2 = tg.sum_over_processes(%sw, %sb) : tensor<f64>, tensor<f64>
  %n = tg.global_norm %t#0, %t#1 : tensor<f64>, tensor<f64>
  %p = tg.shard %w over 3 : tensor<4x8xf32>
  %p1 = tg.sgd_update %p, %d#2, %lr : tensor<11xf32>
  %sent, %whole, %r2 = tg.all_gather_start(%p1) into (%w) over 3 : tensor<11xf32> into tensor<4x8xf32>
  %e:2 = tg.collective_wait %r2(%sent, %whole) : tensor<11xf32>, tensor<4x8xf32>
  return %n, %e#1 : tensor<f32>, tensor<4x8xf32>
}

// Mixed precision: casts, and products of bf16/f16 operands with f32 results.
// CHECK-LABEL: func.func @mixed_precision
// CHECK: tg.cast %{{.*}} : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: tg.linear %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<6x8xbf16> -> tensor<4x6xf32>
// CHECK: tg.matmul %{{.*}}, %{{.*}} {transpose_lhs} : tensor<4x8xbf16>, tensor<4x6xbf16> -> tensor<8x6xf32>
// CHECK: tg.matmul %{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<8x6xf16> -> tensor<4x6xf16>
func.func @mixed_precision(%x: tensor<4x8xf32>, %w: tensor<6x8xbf16>, %d: tensor<4x6xbf16>,
                           %h: tensor<4x8xf16>, %k: tensor<8x6xf16>) -> (tensor<4x6xf32>, tensor<8x6xf32>, tensor<4x6xf16>) {
  %xl = tg.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
  %y = tg.linear %xl, %w : tensor<4x8xbf16>, tensor<6x8xbf16> -> tensor<4x6xf32>
  %g = tg.matmul %xl, %d {transpose_lhs} : tensor<4x8xbf16>, tensor<4x6xbf16> -> tensor<8x6xf32>
  %z = tg.matmul %h, %k : tensor<4x8xf16>, tensor<8x6xf16> -> tensor<4x6xf16>
  return %y, %g, %z : tensor<4x6xf32>, tensor<8x6xf32>, tensor<4x6xf16>
}

// Generation: RoPE and attention at positions, against a KV cache.

// CHECK-LABEL: func.func @kv_cache_step
func.func @kv_cache_step(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x2x8xf32>,
                         %kc: tensor<1x16x2x8xf32>, %pos: tensor<1x1xi32>)
    -> (tensor<1x1x4x8xf32>, tensor<1x16x2x8xf32>) {
  // CHECK: tg.rope %{{.*}} at %{{.*}} {max_position = 16 : i64} : tensor<1x1x4x8xf32>, tensor<1x1xi32>
  %rq = tg.rope %q at %pos {max_position = 16 : i64} : tensor<1x1x4x8xf32>, tensor<1x1xi32>
  // CHECK: tg.cache_update %{{.*}}, %{{.*}} at %{{.*}} : tensor<1x16x2x8xf32>, tensor<1x1x2x8xf32>, tensor<1x1xi32>
  %kc1 = tg.cache_update %kc, %k at %pos : tensor<1x16x2x8xf32>, tensor<1x1x2x8xf32>, tensor<1x1xi32>
  // CHECK: tg.attention %{{.*}}, %{{.*}}, %{{.*}} at %{{.*}} {causal, window = 4 : i64} : tensor<1x1x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x1xi32> -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>
  %o, %lse = tg.attention %rq, %kc1, %kc1 at %pos {causal, window = 4 : i64} : tensor<1x1x4x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x1xi32> -> tensor<1x1x4x8xf32>, tensor<1x1x4xf32>
  return %o, %kc1 : tensor<1x1x4x8xf32>, tensor<1x16x2x8xf32>
}
