func.func @forward(%emb: tensor<16x8xf32> {tg.param = "embed"},
                   %n0: tensor<8xf32> {tg.param = "layers.0.norm"},
                   %w0: tensor<8x8xf32> {tg.param = "layers.0.proj"},
                   %n1: tensor<8xf32> {tg.param = "layers.1.norm"},
                   %w1: tensor<8x8xf32> {tg.param = "layers.1.proj"},
                   %head: tensor<16x8xf32> {tg.param = "head"},
                   %ids: tensor<2x4xi32> {tg.input = "input_ids"},
                   %tgt: tensor<2x4xi32> {tg.input = "targets"}) -> tensor<f32> {
  %h0 = tg.embedding %emb, %ids : tensor<16x8xf32>, tensor<2x4xi32> -> tensor<2x4x8xf32> loc("embed")
  %a0 = tg.rms_norm %h0, %n0 {eps = 1.0e-5 : f64} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32> loc("layers.0.norm")
  %p0 = tg.linear %a0, %w0 : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32> loc("layers.0.proj")
  %s0 = tg.silu %p0 : tensor<2x4x8xf32> loc("layers.0.act")
  %h1 = tg.add %h0, %s0 : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("layers.0.residual")
  %a1 = tg.rms_norm %h1, %n1 {eps = 1.0e-5 : f64} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32> loc("layers.1.norm")
  %p1 = tg.linear %a1, %w1 : tensor<2x4x8xf32>, tensor<8x8xf32> -> tensor<2x4x8xf32> loc("layers.1.proj")
  %s1 = tg.silu %p1 : tensor<2x4x8xf32> loc("layers.1.act")
  %h2 = tg.add %h1, %s1 : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("layers.1.residual")
  %l = tg.linear %h2, %head : tensor<2x4x8xf32>, tensor<16x8xf32> -> tensor<2x4x16xf32> loc("head")
  %loss = tg.cross_entropy %l, %tgt : tensor<2x4x16xf32>, tensor<2x4xi32> -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}
