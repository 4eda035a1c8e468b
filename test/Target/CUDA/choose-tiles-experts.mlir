// The GPU's chunks of an expert's rows: every chunk's product is a launch
// of the matmul kernel (64-row tiles), so full chunks of 256 rows, the
// remainder in padded chunks of 64; options override them, and a tail
// longer than a chunk is refused.
// RUN: tgc-opt %s --tgc-gpu-choose-tiles | FileCheck %s
// RUN: tgc-opt %s --tgc-gpu-choose-tiles="score-tile-bytes=0 expert-chunk-rows=128 expert-tail-rows=16" | FileCheck %s --check-prefix=SMALL
// RUN: not tgc-opt %s --tgc-gpu-choose-tiles="expert-chunk-rows=16 expert-tail-rows=32" 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK-LABEL: func.func @experts
// CHECK: tg.grouped_matmul {{.*}}tg.tiling = #tg.row_chunks<rows = 256, tail_rows = 64>
// CHECK: tg.grouped_weight_grad {{.*}}tg.tiling = #tg.row_chunks<rows = 256, tail_rows = 64>
// SMALL: tg.grouped_matmul {{.*}}tg.tiling = #tg.row_chunks<rows = 128, tail_rows = 16>
// SMALL: tg.grouped_weight_grad {{.*}}tg.tiling = #tg.row_chunks<rows = 128, tail_rows = 16>
// BAD: expert chunks need 1 <= expert-tail-rows <= expert-chunk-rows, got 32 and 16
func.func @experts(%x: tensor<600x24xf32>, %o: tensor<3xi32>, %w0: tensor<40x24xf32>, %w1: tensor<40x24xf32>, %dy: tensor<600x40xf32>) -> (tensor<600x40xf32>, tensor<40x24xf32>) {
  %y = tg.grouped_matmul %x, %o, %w0, %w1 {transpose_weights} : tensor<600x24xf32>, tensor<3xi32>, tensor<40x24xf32>, tensor<40x24xf32> -> tensor<600x40xf32>
  %d:2 = tg.grouped_weight_grad %dy, %x, %o : tensor<600x40xf32>, tensor<600x24xf32>, tensor<3xi32> -> tensor<40x24xf32>, tensor<40x24xf32>
  return %y, %d#0 : tensor<600x40xf32>, tensor<40x24xf32>
}
