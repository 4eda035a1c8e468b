// A two-layer MLP classifier's forward pass in the tg dialect: 8 features,
// 16 hidden units, 4 classes, batch 2. Try:
//   tgc-opt examples/mlp.mlir --canonicalize --mlir-print-ir-after-all
func.func @forward(%w0: tensor<16x8xf32> {tg.param = "layers.0.weight"},
                   %b0: tensor<16xf32> {tg.param = "layers.0.bias"},
                   %w1: tensor<4x16xf32> {tg.param = "layers.1.weight"},
                   %b1: tensor<4xf32> {tg.param = "layers.1.bias"},
                   %x: tensor<2x8xf32> {tg.input = "features"},
                   %y: tensor<2xi32> {tg.input = "labels"}) -> tensor<f32> {
  %h = tg.linear %x, %w0, %b0 : tensor<2x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<2x16xf32>
  %a = tg.relu %h : tensor<2x16xf32>
  %logits = tg.linear %a, %w1, %b1 : tensor<2x16xf32>, tensor<4x16xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %loss = tg.cross_entropy %logits, %y : tensor<2x4xf32>, tensor<2xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
