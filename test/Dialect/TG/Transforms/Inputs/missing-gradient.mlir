// tg-optimizer: a trainable parameter ("b") without its gradient.
// expected-error@+1 {{tg-optimizer: @train_step must return (loss, tg.output values, one tg.grad per tg.param that is not tg.frozen)}}
func.func @train_step(%w: tensor<4x8xf32> {tg.param = "w"}, %b: tensor<4xf32> {tg.param = "b"},
                      %x: tensor<2x8xf32> {tg.input = "x"}) -> (tensor<f32> {tg.output = "loss"}, tensor<4x8xf32> {tg.grad = "w"}, tensor<4xf32> {tg.grad = "c"}) {
  %loss = tg.reduce_sum %x [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %loss, %w, %b : tensor<f32>, tensor<4x8xf32>, tensor<4xf32>
}
