// The passes of tgc-vectorize-matmuls one at a time: tgc-cpu-mark-tile-fusions
// takes the fill that zeroes a product's output (its value on the product)
// and links the epilogue to the product by one index; tgc-cpu-tile-products
// makes the output tiles, which keep the marks; tgc-cpu-fuse-into-tiles
// starts each tile from the fill and runs the epilogue on it, and the
// whole-buffer loop and the links go.
// RUN: tgc-opt %s --tgc-cpu-mark-tile-fusions | FileCheck %s --check-prefix=MARK
// RUN: tgc-opt %s --tgc-cpu-mark-tile-fusions --tgc-cpu-tile-products="tiles=32,48,16,4,16" | FileCheck %s --check-prefix=TILES
// RUN: tgc-opt %s --tgc-cpu-mark-tile-fusions --tgc-cpu-tile-products="tiles=32,48,16,4,16" --tgc-cpu-fuse-into-tiles | FileCheck %s --check-prefix=FUSED

// MARK-LABEL: func.func @epilogue
// MARK-NOT: linalg.fill
// MARK: linalg.matmul {tgc.epilogue = 0 : i64, tgc.fill_tiles_with = 0.000000e+00 : f32}
// MARK: linalg.generic {{.*}}ins(%arg2, %{{.*}} : {{.*}}) outs(%arg3 : {{.*}}) attrs =  {tgc.epilogue_id = 0 : i64}

// TILES-LABEL: func.func @epilogue
// TILES: scf.forall (%{{.*}}, %{{.*}}) in (4, 2)
// TILES: linalg.matmul {tg.tiling = #tg.matmul_tiling<tile_m = 32, tile_n = 48, tile_k = 16, register_m = 4, register_n = 16, batched = false>, tgc.epilogue = 0 : i64, tgc.fill_tiles_with = 0.000000e+00 : f32}
// TILES: linalg.generic {{.*}}tgc.epilogue_id = 0

// FUSED-LABEL: func.func @epilogue
// FUSED: scf.forall
// FUSED: linalg.fill ins(%{{.*}} : f32) outs(%[[TILE:.*]] : memref<32x48xf32, strided<[96, 1], offset: ?>>)
// FUSED-NEXT: linalg.matmul {tg.tiling = #tg.matmul_tiling<tile_m = 32, {{.*}}>} ins
// FUSED-NEXT: memref.subview
// FUSED-NEXT: memref.subview
// FUSED-NEXT: linalg.generic {{.*}} ins(%{{.*}}, %[[TILE]] : {{.*}}) outs(%{{.*}} : memref<32x48xf32, strided<[96, 1], offset: ?>>) {
// FUSED: arith.addf
// FUSED-NOT: linalg.generic
// FUSED-NOT: tgc.epilogue
// FUSED: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @epilogue(%a: memref<128x64xf32>, %b: memref<64x96xf32>, %x: memref<2x64x96xf32>, %y: memref<2x64x96xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x96xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x96xf32>)
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x96xf32>) outs(%c : memref<128x96xf32>)
  %c3 = memref.expand_shape %c [[0, 1], [2]] output_shape [2, 64, 96] : memref<128x96xf32> into memref<2x64x96xf32>
  linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %c3 : memref<2x64x96xf32>, memref<2x64x96xf32>) outs(%y : memref<2x64x96xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<128x96xf32>
  return
}
