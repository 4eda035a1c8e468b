// Every verifier rule of the tg ops, one case each.
// RUN: tgc-opt %s --split-input-file --verify-diagnostics

func.func @reshape_failure_size(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'tg.reshape' op cannot reshape 'tensor<2x3xf32>' (6 elements) to 'tensor<7xf32>' (7 elements)}}
  %0 = tg.reshape %x : tensor<2x3xf32> -> tensor<7xf32>
  return
}

// -----

func.func @reshape_failure_element_type(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{element type changes from 'f32' to 'f16'}}
  %0 = tg.reshape %x : tensor<2x3xf32> -> tensor<6xf16>
  return
}

// -----

func.func @reshape_failure_dynamic(%x: tensor<?x3xf32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = tg.reshape %x : tensor<?x3xf32> -> tensor<6xf32>
  return
}

// -----

func.func @transpose_failure_length(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.transpose' op permutation has 3 entries but the input has rank 2}}
  %0 = tg.transpose %x [0, 1, 2] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_failure_not_permutation(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{permutation [0, 0] is not a permutation of [0, 2)}}
  %0 = tg.transpose %x [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return
}

// -----

func.func @transpose_failure_result(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.transpose' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  %0 = tg.transpose %x [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_failure(%x: tensor<3xf32>) {
  // expected-error@+1 {{'tg.broadcast' op cannot broadcast 'tensor<3xf32>' to 'tensor<2x4xf32>'}}
  %0 = tg.broadcast %x : tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @broadcast_failure_element_type(%x: tensor<4xf32>) {
  // expected-error@+1 {{'tg.broadcast' op element type changes from 'f32' to 'f64'}}
  %0 = tg.broadcast %x : tensor<4xf32> -> tensor<2x4xf64>
  return
}

// -----

func.func @reduce_sum_failure_range(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{reduction dimension 2 is out of range for rank 2}}
  %0 = tg.reduce_sum %x [2] : tensor<2x3xf32> -> tensor<2xf32>
  return
}

// -----

func.func @reduce_sum_failure_unsorted(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{reduction dimensions [1, 0] must be sorted and unique}}
  %0 = tg.reduce_sum %x [1, 0] : tensor<2x3xf32> -> tensor<f32>
  return
}

// -----

func.func @slice_failure_bounds(%x: tensor<2x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.slice' op slice [6, 10) is out of bounds for dimension 1 of size 8}}
  %0 = tg.slice %x axis 1 start 6 size 4 : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_failure_axis(%x: tensor<2x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.slice' op axis 2 is out of range for rank 2}}
  %0 = tg.slice %x axis 2 start 0 size 1 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @matmul_failure_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.matmul' op contraction sizes differ: lhs K = 3, rhs K = 4}}
  %0 = tg.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_failure_rank(%a: tensor<3xf32>, %b: tensor<3x5xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{operands must have rank >= 2, got lhs rank 1 and rhs rank 2}}
  %0 = tg.matmul %a, %b : tensor<3xf32>, tensor<3x5xf32> -> tensor<5xf32>
  return
}

// -----

func.func @matmul_failure_batch(%a: tensor<2x4x3xf32>, %b: tensor<3x3x5xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{batch dimensions [2] and [3] differ}}
  %0 = tg.matmul %a, %b : tensor<2x4x3xf32>, tensor<3x3x5xf32> -> tensor<2x4x5xf32>
  return
}

// -----

func.func @matmul_failure_element_type(%a: tensor<2x3xf32>, %b: tensor<3x5xf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{lhs and rhs must have the same element type, got 'f32' and 'f16'}}
  %0 = tg.matmul %a, %b : tensor<2x3xf32>, tensor<3x5xf16> -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_failure_integer(%a: tensor<2x3xi32>, %b: tensor<3x5xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of 64-bit float or 32-bit float or bfloat16 type or 16-bit float values}}
  %0 = tg.matmul %a, %b : tensor<2x3xi32>, tensor<3x5xi32> -> tensor<2x5xi32>
  return
}

// -----

func.func @linear_failure_layout(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.linear' op weight is [8, 6] but the input's last dimension is 8 (weight layout is [out, in])}}
  %0 = tg.linear %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @linear_failure_weight_rank(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.linear' op weight must be [out, in], got rank 1}}
  %0 = tg.linear %x, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @linear_failure_bias(%x: tensor<4x8xf32>, %w: tensor<6x8xf32>, %b: tensor<8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.linear' op bias must be [6], got [8]}}
  %0 = tg.linear %x, %w, %b : tensor<4x8xf32>, tensor<6x8xf32>, tensor<8xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @add_failure_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.add' op operand shapes [2, 3] and [4] are not broadcast-compatible}}
  %0 = tg.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @mul_failure_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.mul' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  %0 = tg.mul %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @sub_failure_element_type(%a: tensor<3xf32>, %b: tensor<3xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.sub' op lhs and rhs must have the same element type, got 'f32' and 'bf16'}}
  %0 = tg.sub %a, %b : tensor<3xf32>, tensor<3xbf16> -> tensor<3xf32>
  return
}

// -----

func.func @gelu_failure_approximate(%x: tensor<3xf32>) {
  // expected-error@+1 {{'tg.gelu' op approximate must be "none" or "tanh", got "sigmoid"}}
  %0 = tg.gelu %x {approximate = "sigmoid"} : tensor<3xf32>
  return
}

// -----

func.func @softmax_failure_axis(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'tg.softmax' op axis 2 is out of range for rank 2}}
  %0 = tg.softmax %x axis 2 : tensor<2x3xf32>
  return
}

// -----

func.func @relu_failure_integer(%x: tensor<3xi32>) {
  // expected-error@+1 {{'tg.relu' op operand #0 must be statically shaped tensor of 64-bit float}}
  %0 = tg.relu %x : tensor<3xi32>
  return
}

// -----

func.func @embedding_failure_table(%t: tensor<16xf32>, %ids: tensor<4xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.embedding' op table must be [vocab, dim], got rank 1}}
  %0 = tg.embedding %t, %ids : tensor<16xf32>, tensor<4xi32> -> tensor<4x16xf32>
  return
}

// -----

func.func @embedding_failure_ids(%t: tensor<16x8xf32>, %ids: tensor<4xf32>) {
  // expected-error@+1 {{'tg.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = tg.embedding %t, %ids : tensor<16x8xf32>, tensor<4xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @rms_norm_failure_weight(%x: tensor<2x8xf32>, %w: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.rms_norm' op weight must be [8] (the input's last dimension), got [4]}}
  %0 = tg.rms_norm %x, %w : tensor<2x8xf32>, tensor<4xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_failure_bias(%x: tensor<2x8xf32>, %w: tensor<8xf32>, %b: tensor<2x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.layer_norm' op bias must be [8] (the input's last dimension), got [2, 8]}}
  %0 = tg.layer_norm %x, %w, %b : tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @rope_failure_rank(%x: tensor<2x8x16xf32>) {
  // expected-error@+1 {{'tg.rope' op input must be [B, S, H, D], got rank 3}}
  %0 = tg.rope %x : tensor<2x8x16xf32>
  return
}

// -----

func.func @rope_failure_odd(%x: tensor<2x8x4x5xf32>) {
  // expected-error@+1 {{'tg.rope' op head dimension must be even, got 5}}
  %0 = tg.rope %x : tensor<2x8x4x5xf32>
  return
}

// -----

func.func @rope_failure_theta(%x: tensor<2x8x4x4xf32>) {
  // expected-error@+1 {{'tg.rope' op theta must be positive}}
  %0 = tg.rope %x {theta = -1.0 : f64} : tensor<2x8x4x4xf32>
  return
}

// -----

func.func @rope_failure_frequency_count(%x: tensor<2x8x4x6xf32>) {
  // expected-error@+1 {{'tg.rope' op frequencies must hold one value per pair (3), got 2}}
  %0 = tg.rope %x {frequencies = array<f64: 1.0, 0.5>} : tensor<2x8x4x6xf32>
  return
}

// -----

func.func @rope_failure_rotary_odd(%x: tensor<2x8x4x16xf32>) {
  // expected-error@+1 {{'tg.rope' op rotary_dims must be even and in [2, 16], got 5}}
  %0 = tg.rope %x {rotary_dims = 5 : i64} : tensor<2x8x4x16xf32>
  return
}

// -----

func.func @rope_failure_rotary_wide(%x: tensor<2x8x4x16xf32>) {
  // expected-error@+1 {{'tg.rope' op rotary_dims must be even and in [2, 16], got 18}}
  %0 = tg.rope %x {rotary_dims = 18 : i64} : tensor<2x8x4x16xf32>
  return
}

// -----

func.func @rope_failure_rotary_frequencies(%x: tensor<2x8x4x16xf32>) {
  // expected-error@+1 {{'tg.rope' op frequencies must hold one value per pair (2), got 8}}
  %0 = tg.rope %x {rotary_dims = 4 : i64, frequencies = array<f64: 1.0, 0.5, 0.25, 0.125, 1.0, 0.5, 0.25, 0.125>} : tensor<2x8x4x16xf32>
  return
}

// -----

func.func @rope_failure_frequency_sign(%x: tensor<2x8x4x4xf32>) {
  // expected-error@+1 {{'tg.rope' op frequencies must be positive and finite, got -5.000000e-01}}
  %0 = tg.rope %x {frequencies = array<f64: 1.0, -0.5>} : tensor<2x8x4x4xf32>
  return
}

// -----

func.func @attention_failure_softcap(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>) {
  // expected-error@+1 {{'tg.attention' op softcap must be positive and finite, got 0.000000e+00}}
  %o, %lse = tg.attention %q, %k, %k {causal, softcap = 0.0 : f64} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @cross_entropy_failure_softcap(%l: tensor<4x7xf32>, %t: tensor<4xi32>) {
  // expected-error@+1 {{'tg.cross_entropy' op softcap must be positive and finite, got -3.000000e+00}}
  %0 = tg.cross_entropy %l, %t {softcap = -3.0 : f64} : tensor<4x7xf32>, tensor<4xi32> -> tensor<f32>
  return
}

// -----

func.func @attention_failure_rank(%q: tensor<2x8x16xf32>, %k: tensor<2x8x4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.attention' op query must be [B, S, H, D], got rank 3}}
  %0, %lse = tg.attention %q, %k, %k : tensor<2x8x16xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_failure_window_not_causal(%q: tensor<2x8x4x4xf32>) {
  // expected-error@+1 {{'tg.attention' op window needs causal (a window of the last 3 keys narrows the causal mask)}}
  %0, %lse = tg.attention %q, %q, %q {window = 3} : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_failure_window_zero(%q: tensor<2x8x4x4xf32>) {
  // expected-error@+1 {{'tg.attention' op attribute 'window' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0, %lse = tg.attention %q, %q, %q {causal, window = 0} : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_grad_failure_window_not_causal(%q: tensor<2x8x4x4xf32>, %lse: tensor<2x8x4xf32>) {
  // expected-error@+1 {{'tg.attention_grad' op window needs causal}}
  %dq, %dk, %dv = tg.attention_grad %q, %q, %q, %q, %q, %lse {window = 2} : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_failure_groups(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x3x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.attention' op key/value heads (3) must divide query heads (4)}}
  %0, %lse = tg.attention %q, %k, %k : tensor<2x8x4x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_failure_head_dim(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.attention' op query head dim 4 differs from key head dim 8}}
  %0, %lse = tg.attention %q, %k, %k : tensor<2x8x4x4xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32> -> tensor<2x8x4x8xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_failure_batch(%q: tensor<2x8x4x4xf32>, %k: tensor<3x8x4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.attention' op batch sizes differ: query 2, key 3, value 3}}
  %0, %lse = tg.attention %q, %k, %k : tensor<2x8x4x4xf32>, tensor<3x8x4x4xf32>, tensor<3x8x4x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_failure_kv(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x4x4xf32>, %v: tensor<2x6x4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.attention' op key [2, 8, 4, 4] and value [2, 6, 4, 4] must agree on sequence length and heads}}
  %0, %lse = tg.attention %q, %k, %v : tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x6x4x4xf32> -> tensor<2x8x4x4xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_failure_causal(%q: tensor<2x4x4x4xf32>, %k: tensor<2x8x4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.attention' op causal attention needs equal query and key lengths, got 4 and 8}}
  %0, %lse = tg.attention %q, %k, %k {causal} : tensor<2x4x4x4xf32>, tensor<2x8x4x4xf32>, tensor<2x8x4x4xf32> -> tensor<2x4x4x4xf32>, tensor<2x4x4xf32>
  return
}

// -----

func.func @attention_grad_logsumexp_shape(%q: tensor<2x8x4x4xf32>, %k: tensor<2x8x2x4xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error@+1 {{'tg.attention_grad' op logsumexp must be 'tensor<2x8x4xf32>' (one value per query row), got 'tensor<2x4x8xf32>'}}
  %dq, %dk, %dv = tg.attention_grad %q, %q, %k, %k, %q, %lse {causal} : tensor<2x8x4x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x2x4xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @cross_entropy_failure_targets(%l: tensor<2x8x32xf32>, %t: tensor<2x7xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.cross_entropy' op targets [2, 7] must match the logits' leading dimensions [2, 8]}}
  %0 = tg.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x7xi32> -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_failure_result(%l: tensor<2x8x32xf32>, %t: tensor<2x8xi32>) {
  // expected-error@+1 {{'tg.cross_entropy' op result #0 must be 0D tensor}}
  %0 = tg.cross_entropy %l, %t : tensor<2x8x32xf32>, tensor<2x8xi32> -> tensor<1xf32>
  return
}

// -----

// expected-error@+1 {{'tg.param' on argument #0 must be a non-empty string}}
func.func @param_failure_name(%w: tensor<4xf32> {tg.param = 3 : i64}) {
  return
}

// -----

// expected-error@+1 {{'tg.param' value 'embed' (argument #0) must have a floating-point element type, got 'i32'}}
func.func @param_failure_type(%w: tensor<4xi32> {tg.param = "embed"}) {
  return
}

// -----

// Names identify parameters, inputs and state: two tensor arguments may not
// share one (the error points at the second).
// expected-note@+1 {{argument #0 is named here}}
func.func @param_failure_duplicate(%w: tensor<4xf32> {tg.param = "w"},
    // expected-error@+1 {{argument #1 of @param_failure_duplicate repeats the 'tg.param' name "w" of argument #0}}
    %v: tensor<4xf32> {tg.param = "w"}) {
  return
}

// -----

// expected-note@+1 {{argument #0 is named here}}
func.func @input_failure_duplicate(%a: tensor<4xi32> {tg.input = "input_ids"},
    %w: tensor<4xf32> {tg.param = "input_ids"},
    // expected-error@+1 {{argument #2 of @input_failure_duplicate repeats the 'tg.input' name "input_ids" of argument #0}}
    %b: tensor<4xi32> {tg.input = "input_ids"}) {
  return
}

// -----

func.func @state_failure_duplicate(%w: tensor<4xf32> {tg.param = "w"},
    // expected-note@+1 {{argument #1 is named here}}
    %m: tensor<4xf32> {tg.state = "exp_avg.w"},
    // expected-error@+1 {{argument #2 of @state_failure_duplicate repeats the 'tg.state' name "exp_avg.w" of argument #1}}
    %v: tensor<4xf32> {tg.state = "exp_avg.w"}) {
  return
}

// -----

// Element counts (and byte sizes) must fit in int64.
// expected-error@+1 {{argument #0 marked 'tg.param': 'tensor<4000000000x4000000000xf32>' has 2^63 or more elements}}
func.func @param_failure_too_many_elements(%w: tensor<4000000000x4000000000xf32> {tg.param = "w"}) {
  return
}

// -----

// expected-error@+1 {{argument #0 marked 'tg.input': 'tensor<3000000000x3000000000xi32>' has 2^63 or more bytes (9000000000000000000 elements of 4 bytes)}}
func.func @input_failure_too_many_bytes(%x: tensor<3000000000x3000000000xi32> {tg.input = "x"}) {
  return
}

// -----

func.func @relu_failure_too_many_elements(%x: tensor<4000000000x4000000000xf32>) {
  // expected-error@+1 {{'tg.relu' op operand #0: 'tensor<4000000000x4000000000xf32>' has 2^63 or more elements}}
  %0 = tg.relu %x : tensor<4000000000x4000000000xf32>
  return
}

// -----

func.func @reshape_failure_too_many_elements(%x: tensor<4xf32>) {
  // expected-error@+1 {{'tg.reshape' op result #0: 'tensor<4x4611686018427387904xf32>' has 2^63 or more elements}}
  %0 = tg.reshape %x : tensor<4xf32> -> tensor<4x4611686018427387904xf32>
  return
}

// -----

// expected-error@+1 {{unknown tg argument attribute 'tg.weight'}}
func.func @arg_attr_failure_unknown(%w: tensor<4xf32> {tg.weight = "w"}) {
  return
}

// -----

func.func @constant_failure_type() {
  // expected-error@+1 {{'tg.constant' op result #0 must be statically shaped tensor}}
  %0 = tg.constant dense<true> : tensor<2xi1>
  return
}

// -----

func.func @fused_loss_weight(%h: tensor<4x5xf32>, %w: tensor<7x6xf32>, %t: tensor<4xi32>) -> tensor<f32> {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{weight is [7, 6] but the input's last dimension is 5}}
  %l, %dh, %dw = tg.linear_cross_entropy %h, %w, %t {chunk_rows = 2 : i64} : tensor<4x5xf32>, tensor<7x6xf32>, tensor<4xi32> -> tensor<f32>, tensor<4x5xf32>, tensor<7x6xf32>
  return %l : tensor<f32>
}

// -----

func.func @fused_loss_targets(%h: tensor<4x5xf32>, %w: tensor<7x5xf32>, %t: tensor<3xi32>) -> tensor<f32> {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{targets [3] must match the logits' leading dimensions [4]}}
  %l, %dh, %dw = tg.linear_cross_entropy %h, %w, %t {chunk_rows = 2 : i64} : tensor<4x5xf32>, tensor<7x5xf32>, tensor<3xi32> -> tensor<f32>, tensor<4x5xf32>, tensor<7x5xf32>
  return %l : tensor<f32>
}

// -----

func.func @fused_loss_chunk(%h: tensor<4x5xf32>, %w: tensor<7x5xf32>, %t: tensor<4xi32>) -> tensor<f32> {
  // expected-error@+1 {{attribute 'chunk_rows' failed to satisfy constraint}}
  %l, %dh, %dw = tg.linear_cross_entropy %h, %w, %t {chunk_rows = 0 : i64} : tensor<4x5xf32>, tensor<7x5xf32>, tensor<4xi32> -> tensor<f32>, tensor<4x5xf32>, tensor<7x5xf32>
  return %l : tensor<f32>
}

// -----

func.func @fused_loss_bias_grad(%h: tensor<4x5xf32>, %w: tensor<7x5xf32>, %b: tensor<7xf32>, %t: tensor<4xi32>) -> tensor<f32> {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.linear_cross_entropy' op inferred type(s)}}
  %l, %dh, %dw, %db = tg.linear_cross_entropy %h, %w, %t bias(%b : tensor<7xf32>) {chunk_rows = 2 : i64} : tensor<4x5xf32>, tensor<7x5xf32>, tensor<4xi32> -> tensor<f32>, tensor<4x5xf32>, tensor<7x5xf32>, tensor<5xf32>
  return %l : tensor<f32>
}

// -----

func.func @wait_other_tensor(%g: tensor<4xf32>, %h: tensor<4xf32>, %w: tensor<f32>) -> tensor<4xf32> {
  %sent, %request = tg.all_reduce_start(%g) weight %w : tensor<4xf32>
  // expected-error@+1 {{'tg.collective_wait' op expects the request and the tensors of one tg.all_reduce_start}}
  %sum = tg.collective_wait %request(%h) : tensor<4xf32>
  return %sum : tensor<4xf32>
}

// -----

func.func @wait_without_start(%r: i64, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'tg.collective_wait' op expects the request and the tensors of one tg.all_reduce_start}}
  %sum = tg.collective_wait %r(%g) : tensor<4xf32>
  return %sum : tensor<4xf32>
}

// -----

func.func @cast_failure_shape(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{'tg.cast' op changes the shape from 'tensor<2x3xf32>' to 'tensor<3x2xbf16>'; only the element type may change}}
  %0 = tg.cast %x : tensor<2x3xf32> -> tensor<3x2xbf16>
  return
}

// -----

func.func @cast_failure_integer(%x: tensor<2x3xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of}}
  %0 = tg.cast %x : tensor<2x3xi32> -> tensor<2x3xf32>
  return
}

// -----

// Only bf16/f16 operands may accumulate into a wider (f32) result.
func.func @matmul_failure_narrow_result(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.matmul' op inferred type(s) 'tensor<4x6xf32>' are incompatible with return type(s) of operation 'tensor<4x6xbf16>'}}
  %0 = tg.matmul %a, %b : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xbf16>
  return
}

// -----

func.func @linear_failure_f64_result(%x: tensor<4x8xbf16>, %w: tensor<6x8xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.linear' op inferred type(s) 'tensor<4x6xbf16>' are incompatible with return type(s) of operation 'tensor<4x6xf64>'}}
  %0 = tg.linear %x, %w : tensor<4x8xbf16>, tensor<6x8xbf16> -> tensor<4x6xf64>
  return
}

// -----

func.func @linear_failure_mixed_operands(%x: tensor<4x8xbf16>, %w: tensor<6x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{input and weight must have the same element type, got 'bf16' and 'f32'}}
  %0 = tg.linear %x, %w : tensor<4x8xbf16>, tensor<6x8xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @gather_wrong_shard(%s: tensor<10xf32>, %w: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{'tg.all_gather_start' op the shard of 'tensor<4x8xf32>' over 3 processes is 'tensor<11xf32>', got 'tensor<10xf32>'}}
  %sent, %whole, %r = tg.all_gather_start(%s) into (%w) over 3 : tensor<10xf32> into tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}

// -----

func.func @scatter_no_processes(%g: tensor<4xf32>, %dp: tensor<f32>) {
  // expected-error@+1 {{'tg.reduce_scatter_start' op attribute 'processes' failed to satisfy constraint}}
  %r:3 = "tg.reduce_scatter_start"(%g, %dp) {processes = 0 : i64} : (tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, i64)
  return
}

// -----

func.func @wait_half_of_scatter(%g: tensor<4xf32>, %dp: tensor<f32>) -> tensor<2xf32> {
  %sum, %shard, %r = tg.reduce_scatter_start(%g) weight %dp over 2 : tensor<4xf32>
  // expected-error@+1 {{'tg.collective_wait' op expects the request and the tensors of one tg.all_reduce_start, tg.reduce_scatter_start, tg.all_gather_start or tg.parameter_gather_start}}
  %s = tg.collective_wait %r(%shard) : tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

// expected-error@+1 {{'tg.processes' must be a positive integer, got 0 : i64}}
func.func @zero_processes() attributes {tg.processes = 0 : i64} {
  return
}

// -----

func.func @negative_growth_interval(%s: tensor<f32>) {
  // expected-error@+1 {{'tg.loss_scale_update' op attribute 'growth_interval' failed to satisfy constraint}}
  %r:4 = tg.loss_scale_update %s, %s, %s {growth_interval = -1 : i64} : tensor<f32>
  return
}

// -----

func.func @not_finite_of_a_tensor(%n: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'tg.not_finite' op operand #0 must be 0-d tensor of f32, but got 'tensor<4xf32>'}}
  %s = tg.not_finite %n : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

func.func @rope_positions_without_limit(%x: tensor<1x1x2x4xf32>, %p: tensor<1x1xi32>) {
  // expected-error@+1 {{'tg.rope' op positions need max_position (the tables' length)}}
  %0 = tg.rope %x at %p : tensor<1x1x2x4xf32>, tensor<1x1xi32>
  return
}

// -----

func.func @rope_positions_shape(%x: tensor<1x2x2x4xf32>, %p: tensor<1x1xi32>) {
  // expected-error@+1 {{'tg.rope' op positions must be [1, 2] (one per token), got 'tensor<1x1xi32>'}}
  %0 = tg.rope %x at %p {max_position = 8 : i64} : tensor<1x2x2x4xf32>, tensor<1x1xi32>
  return
}

// -----

func.func @attention_more_queries_than_cache(%q: tensor<1x9x2x4xf32>, %k: tensor<1x8x2x4xf32>, %p: tensor<1x9xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{'tg.attention' op attention at positions reads a cache of 8 keys: it takes at most that many queries, got 9}}
  %o, %l = tg.attention %q, %k, %k at %p {causal} : tensor<1x9x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x9xi32> -> tensor<1x9x2x4xf32>, tensor<1x9x2xf32>
  return
}

// -----

func.func @cache_update_heads(%c: tensor<1x8x2x4xf32>, %r: tensor<1x1x3x4xf32>, %p: tensor<1x1xi32>) {
  // expected-error@+1 {{'tg.cache_update' op rows 'tensor<1x1x3x4xf32>' do not fit cache 'tensor<1x8x2x4xf32>'}}
  %0 = tg.cache_update %c, %r at %p : tensor<1x8x2x4xf32>, tensor<1x1x3x4xf32>, tensor<1x1xi32>
  return
}

// -----

func.func @cache_update_positions(%c: tensor<1x8x2x4xf32>, %r: tensor<1x2x2x4xf32>, %p: tensor<1x1xi32>) {
  // expected-error@+1 {{'tg.cache_update' op positions must be [1, 2] (one per token), got 'tensor<1x1xi32>'}}
  %0 = tg.cache_update %c, %r at %p : tensor<1x8x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x1xi32>
  return
}

// -----

func.func @tiling_of_wrong_kind(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error@+1 {{'tg.tiling' of this op must be a #tg.row_tasks, got #tg.attention_tiling<tile = 16, task_tile = 0, transposed_operands = false>}}
  %y = tg.rms_norm %x, %w {tg.tiling = #tg.attention_tiling<tile = 16, task_tile = 0, transposed_operands = false>} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @tiling_of_untiled_op(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error@+1 {{'tg.tiling' applies to attention, norm, expert product and matmul ops only}}
  %y = tg.add %x, %x {tg.tiling = #tg.row_tasks<rows = 1>} : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @tiling_negative(%q: tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32> {
  // expected-error@+1 {{attention tiles must not be negative, got tile = -16, task_tile = 0}}
  %o, %lse = tg.attention %q, %q, %q {tg.tiling = #tg.attention_tiling<tile = -16, task_tile = 0, transposed_operands = false>} : tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32> -> tensor<1x4x1x8xf32>, tensor<1x4x1xf32>
  return %o : tensor<1x4x1x8xf32>
}

// -----

func.func @row_tasks_empty(%x: tensor<2x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error@+1 {{row tasks need at least one row each, got rows = 0}}
  %y = tg.rms_norm %x, %w {tg.tiling = #tg.row_tasks<rows = 0>} : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @row_chunks_tail_too_long(%x: tensor<6x24xf32>, %o: tensor<2xi32>, %w: tensor<40x24xf32>) -> tensor<6x40xf32> {
  // expected-error@+1 {{row chunks need 1 <= tail_rows <= rows, got rows = 16, tail_rows = 32}}
  %y = tg.grouped_matmul %x, %o, %w {transpose_weights, tg.tiling = #tg.row_chunks<rows = 16, tail_rows = 32>} : tensor<6x24xf32>, tensor<2xi32>, tensor<40x24xf32> -> tensor<6x40xf32>
  return %y : tensor<6x40xf32>
}

// -----

func.func @matmul_tiling_of_wrong_kind(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{'tg.tiling' of this op must be a #tg.matmul_tiling, got #tg.row_tasks<rows = 1>}}
  %y = linalg.matmul {tg.tiling = #tg.row_tasks<rows = 1>} ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

func.func @matmul_tiling_empty(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{matmul tiles must be positive, got 4 x 0 x 8 (registers 4 x 16)}}
  %y = linalg.matmul {tg.tiling = #tg.matmul_tiling<tile_m = 4, tile_n = 0, tile_k = 8, register_m = 4, register_n = 16, batched = false>} ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
