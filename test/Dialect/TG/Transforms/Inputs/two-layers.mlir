// Two layers and a head under Hugging Face-style names: the units of
// tg-shard-parameters are "layers.0", "layers.1" and "head.weight".
func.func @forward(%w0: tensor<8x8xf32> {tg.param = "layers.0.w"},
                   %b0: tensor<8xf32> {tg.param = "layers.0.b"},
                   %w1: tensor<8x8xf32> {tg.param = "layers.1.w"},
                   %head: tensor<5x8xf32> {tg.param = "head.weight"},
                   %x: tensor<2x8xf32> {tg.input = "x"},
                   %t: tensor<2xi32> {tg.input = "t"}) -> tensor<f32> {
  %h0 = tg.linear %x, %w0, %b0 : tensor<2x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  %a0 = tg.silu %h0 : tensor<2x8xf32>
  %h1 = tg.linear %a0, %w1 : tensor<2x8xf32>, tensor<8x8xf32> -> tensor<2x8xf32>
  %a1 = tg.silu %h1 : tensor<2x8xf32>
  %y = tg.linear %a1, %head : tensor<2x8xf32>, tensor<5x8xf32> -> tensor<2x5xf32>
  %loss = tg.cross_entropy %y, %t : tensor<2x5xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
