// The mixture-of-experts ops print and parse back, and every verifier rule
// rejects what it must.
// RUN: tgc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @moe_block
// CHECK: tg.route %{{.*}} {normalize, top_k = 2 : i64} : tensor<13x5xf32> -> tensor<13x2xf32>, tensor<13x2xi32>
// CHECK: tg.expert_dispatch %{{.*}} {num_experts = 5 : i64} : tensor<13x2xi32> -> tensor<26xi32>, tensor<13x2xi32>, tensor<6xi32>
// CHECK: tg.grouped_matmul %{{.*}} {transpose_weights} : tensor<26x24xbf16>, tensor<6xi32>, tensor<40x24xbf16>, tensor<40x24xbf16>, tensor<40x24xbf16>, tensor<40x24xbf16>, tensor<40x24xbf16> -> tensor<26x40xf32>
// CHECK: tg.grouped_weight_grad %{{.*}} : tensor<26x40xf32>, tensor<26x24xf32>, tensor<6xi32> -> tensor<40x24xf32>, tensor<40x24xf32>, tensor<40x24xf32>, tensor<40x24xf32>, tensor<40x24xf32>
// CHECK: tg.route_grad %{{.*}} {normalize} : tensor<13x2xf32>, tensor<13x5xbf16>, tensor<13x2xi32> -> tensor<13x5xbf16>
func.func @moe_block(%logits: tensor<13x5xf32>, %lb: tensor<13x5xbf16>, %xs: tensor<26x24xbf16>, %w: tensor<40x24xbf16>, %dy: tensor<26x40xf32>, %x: tensor<26x24xf32>) {
  %wt, %e = tg.route %logits {top_k = 2 : i64, normalize} : tensor<13x5xf32> -> tensor<13x2xf32>, tensor<13x2xi32>
  %rows, %pos, %off = tg.expert_dispatch %e {num_experts = 5 : i64} : tensor<13x2xi32> -> tensor<26xi32>, tensor<13x2xi32>, tensor<6xi32>
  %g = tg.grouped_matmul %xs, %off, %w, %w, %w, %w, %w {transpose_weights} : tensor<26x24xbf16>, tensor<6xi32>, tensor<40x24xbf16>, tensor<40x24xbf16>, tensor<40x24xbf16>, tensor<40x24xbf16>, tensor<40x24xbf16> -> tensor<26x40xf32>
  %d:5 = tg.grouped_weight_grad %dy, %x, %off : tensor<26x40xf32>, tensor<26x24xf32>, tensor<6xi32> -> tensor<40x24xf32>, tensor<40x24xf32>, tensor<40x24xf32>, tensor<40x24xf32>, tensor<40x24xf32>
  %dl = tg.route_grad %wt, %lb, %e {normalize} : tensor<13x2xf32>, tensor<13x5xbf16>, tensor<13x2xi32> -> tensor<13x5xbf16>
  return
}

// -----

func.func @route_failure_top_k(%l: tensor<4x3xf32>) {
  // expected-error@+1 {{'tg.route' op top_k 4 is more than the 3 experts}}
  %w, %e = tg.route %l {top_k = 4 : i64} : tensor<4x3xf32> -> tensor<4x4xf32>, tensor<4x4xi32>
  return
}

// -----

func.func @route_failure_weights_type(%l: tensor<4x3xf64>) {
  // expected-error@+1 {{weights must be 'tensor<4x2xf64>', got 'tensor<4x2xf32>'}}
  %w, %e = tg.route %l {top_k = 2 : i64} : tensor<4x3xf64> -> tensor<4x2xf32>, tensor<4x2xi32>
  return
}

// -----

func.func @route_failure_zero_k(%l: tensor<4x3xf32>) {
  // expected-error@+1 {{attribute 'top_k' failed to satisfy constraint}}
  %w, %e = tg.route %l {top_k = 0 : i64} : tensor<4x3xf32> -> tensor<4x0xf32>, tensor<4x0xi32>
  return
}

// -----

func.func @route_grad_failure_shape(%g: tensor<4x2xf32>, %l: tensor<5x3xf32>, %e: tensor<4x2xi32>) {
  // expected-error@+1 {{must be the routing weights of logits}}
  %d = tg.route_grad %g, %l, %e : tensor<4x2xf32>, tensor<5x3xf32>, tensor<4x2xi32> -> tensor<5x3xf32>
  return
}

// -----

func.func @dispatch_failure_offsets(%e: tensor<4x2xi32>) {
  // expected-error@+1 {{offsets must be [4] (one more than the 3 experts), got 'tensor<3xi32>'}}
  %r, %p, %o = tg.expert_dispatch %e {num_experts = 3 : i64} : tensor<4x2xi32> -> tensor<8xi32>, tensor<4x2xi32>, tensor<3xi32>
  return
}

// -----

func.func @dispatch_failure_rows(%e: tensor<4x2xi32>) {
  // expected-error@+1 {{rows must be [8], got 'tensor<4xi32>'}}
  %r, %p, %o = tg.expert_dispatch %e {num_experts = 3 : i64} : tensor<4x2xi32> -> tensor<4xi32>, tensor<4x2xi32>, tensor<4xi32>
  return
}

// -----

func.func @grouped_failure_count(%x: tensor<8x4xf32>, %o: tensor<4xi32>, %w: tensor<6x4xf32>) {
  // expected-error@+1 {{offsets must be [3] (one more than the 2 experts), got 'tensor<4xi32>'}}
  %y = tg.grouped_matmul %x, %o, %w, %w {transpose_weights} : tensor<8x4xf32>, tensor<4xi32>, tensor<6x4xf32>, tensor<6x4xf32> -> tensor<8x6xf32>
  return
}

// -----

func.func @grouped_failure_k(%x: tensor<8x4xf32>, %o: tensor<3xi32>, %w: tensor<6x4xf32>) {
  // expected-error@+1 {{weights 'tensor<6x4xf32>' do not take rows of 4 columns ([K, M])}}
  %y = tg.grouped_matmul %x, %o, %w, %w : tensor<8x4xf32>, tensor<3xi32>, tensor<6x4xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @grouped_failure_mixed(%x: tensor<8x4xf32>, %o: tensor<3xi32>, %w: tensor<6x4xf32>, %v: tensor<5x4xf32>) {
  // expected-error@+1 {{every weight must be 'tensor<6x4xf32>', got 'tensor<5x4xf32>'}}
  %y = tg.grouped_matmul %x, %o, %w, %v {transpose_weights} : tensor<8x4xf32>, tensor<3xi32>, tensor<6x4xf32>, tensor<5x4xf32> -> tensor<8x6xf32>
  return
}

// -----

func.func @grouped_failure_result(%x: tensor<8x4xf32>, %o: tensor<3xi32>, %w: tensor<6x4xf32>) {
  // expected-error@+1 {{result must be [8, 6] of the operands' type (or f32 for bf16/f16), got 'tensor<8x6xbf16>'}}
  %y = tg.grouped_matmul %x, %o, %w, %w {transpose_weights} : tensor<8x4xf32>, tensor<3xi32>, tensor<6x4xf32>, tensor<6x4xf32> -> tensor<8x6xbf16>
  return
}

// -----

func.func @weight_grad_failure_rows(%a: tensor<8x4xf32>, %b: tensor<7x6xf32>, %o: tensor<3xi32>) {
  // expected-error@+1 {{lhs and rhs must be matrices with the same rows}}
  %d:2 = tg.grouped_weight_grad %a, %b, %o : tensor<8x4xf32>, tensor<7x6xf32>, tensor<3xi32> -> tensor<4x6xf32>, tensor<4x6xf32>
  return
}

// -----

func.func @weight_grad_failure_shape(%a: tensor<8x4xf32>, %b: tensor<8x6xf32>, %o: tensor<3xi32>) {
  // expected-error@+1 {{each result must be [4, 6]}}
  %d:2 = tg.grouped_weight_grad %a, %b, %o : tensor<8x4xf32>, tensor<8x6xf32>, tensor<3xi32> -> tensor<6x4xf32>, tensor<6x4xf32>
  return
}
