// One Llama decoder layer (pre-norm attention with RoPE and GQA, SwiGLU MLP)
// in the tg dialect: d 64, 4 query heads and 2 key/value heads of 16,
// batch 2, sequence 8. Try:
//   tgc-opt examples/llama-layer.mlir --canonicalize --mlir-print-ir-after-all
func.func @layer(%h: tensor<2x8x64xf32> {tg.input = "hidden_states"},
                 %ln1: tensor<64xf32> {tg.param = "model.layers.0.input_layernorm.weight"},
                 %wq: tensor<64x64xf32> {tg.param = "model.layers.0.self_attn.q_proj.weight"},
                 %wk: tensor<32x64xf32> {tg.param = "model.layers.0.self_attn.k_proj.weight"},
                 %wv: tensor<32x64xf32> {tg.param = "model.layers.0.self_attn.v_proj.weight"},
                 %wo: tensor<64x64xf32> {tg.param = "model.layers.0.self_attn.o_proj.weight"},
                 %ln2: tensor<64xf32> {tg.param = "model.layers.0.post_attention_layernorm.weight"},
                 %wg: tensor<172x64xf32> {tg.param = "model.layers.0.mlp.gate_proj.weight"},
                 %wu: tensor<172x64xf32> {tg.param = "model.layers.0.mlp.up_proj.weight"},
                 %wd: tensor<64x172xf32> {tg.param = "model.layers.0.mlp.down_proj.weight"}) -> tensor<2x8x64xf32> {
  %n = tg.rms_norm %h, %ln1 {eps = 1.0e-5 : f64} : tensor<2x8x64xf32>, tensor<64xf32> -> tensor<2x8x64xf32>
  %q = tg.linear %n, %wq : tensor<2x8x64xf32>, tensor<64x64xf32> -> tensor<2x8x64xf32>
  %k = tg.linear %n, %wk : tensor<2x8x64xf32>, tensor<32x64xf32> -> tensor<2x8x32xf32>
  %v = tg.linear %n, %wv : tensor<2x8x64xf32>, tensor<32x64xf32> -> tensor<2x8x32xf32>
  %q4 = tg.reshape %q : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %k4 = tg.reshape %k : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %v4 = tg.reshape %v : tensor<2x8x32xf32> -> tensor<2x8x2x16xf32>
  %qr = tg.rope %q4 {theta = 10000.0 : f64} : tensor<2x8x4x16xf32>
  %kr = tg.rope %k4 {theta = 10000.0 : f64} : tensor<2x8x2x16xf32>
  %a, %lse = tg.attention %qr, %kr, %v4 {causal} : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32> -> tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
  %a2 = tg.reshape %a : tensor<2x8x4x16xf32> -> tensor<2x8x64xf32>
  %o = tg.linear %a2, %wo : tensor<2x8x64xf32>, tensor<64x64xf32> -> tensor<2x8x64xf32>
  %h1 = tg.add %h, %o : tensor<2x8x64xf32>, tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  %n2 = tg.rms_norm %h1, %ln2 {eps = 1.0e-5 : f64} : tensor<2x8x64xf32>, tensor<64xf32> -> tensor<2x8x64xf32>
  %g = tg.linear %n2, %wg : tensor<2x8x64xf32>, tensor<172x64xf32> -> tensor<2x8x172xf32>
  %u = tg.linear %n2, %wu : tensor<2x8x64xf32>, tensor<172x64xf32> -> tensor<2x8x172xf32>
  %s = tg.silu %g : tensor<2x8x172xf32>
  %m = tg.mul %s, %u : tensor<2x8x172xf32>, tensor<2x8x172xf32> -> tensor<2x8x172xf32>
  %d = tg.linear %m, %wd : tensor<2x8x172xf32>, tensor<64x172xf32> -> tensor<2x8x64xf32>
  %h2 = tg.add %h1, %d : tensor<2x8x64xf32>, tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %h2 : tensor<2x8x64xf32>
}
