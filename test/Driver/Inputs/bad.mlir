// A tg file with a shape error, for the driver's diagnostics.
func.func @forward(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %0 = tg.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  return
}
