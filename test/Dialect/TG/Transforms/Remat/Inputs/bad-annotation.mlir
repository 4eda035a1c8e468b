func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = tg.relu %x {tg.remat = "maybe"} : tensor<2xf32>
  return %y : tensor<2xf32>
}
