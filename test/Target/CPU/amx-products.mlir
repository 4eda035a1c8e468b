// bf16 x bf16 -> f32 products on AMX tiles (amx=true): operands packed and
// zero padded to whole tiles (A [Mp][Kp], B as pairs along K), tile
// products over an scf.forall of 16 x 16 output tiles, the padded
// accumulator copied back; both operand layouts of a product and awkward
// sizes (K odd, N < 16). Without amx the operands are widened to f32 and
// the product scheduled as an f32 one.
// RUN: tgc-opt %s --tgc-vectorize-matmuls="amx=true vector-bits=512 vector-registers=32" | FileCheck %s
// RUN: tgc-opt %s --tgc-vectorize-matmuls="vector-bits=512 vector-registers=32" --canonicalize | FileCheck %s --check-prefix=WIDE

// CHECK-LABEL: func.func @row_major
// CHECK: %[[AP:.*]] = memref.alloc() : memref<64x256xbf16>
// CHECK: %[[BP:.*]] = memref.alloc() : memref<128x128x2xbf16>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<256x128xbf16>)
// CHECK: scf.forall (%[[I:.*]], %[[J:.*]]) = (0, 0) to (64, 128) step (16, 16)
// CHECK: amx.tile_load %{{.*}}[%[[I]], %[[J]]] : memref<64x128xf32> into !amx.tile<16x16xf32>
// CHECK: amx.tile_load %[[AP]]
// CHECK: amx.tile_mulf {{.*}} : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
// CHECK: amx.tile_store
// CHECK-NOT: linalg.matmul
// WIDE-LABEL: func.func @row_major
// WIDE: arith.extf %{{.*}} : bf16 to f32
// WIDE-NOT: amx.
// WIDE: vector.fma
func.func @row_major(%a: memref<64x256xbf16>, %b: memref<256x128xbf16>, %c: memref<64x128xf32>) {
  linalg.matmul ins(%a, %b : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  return
}

// A read as [K, M] (a weight gradient), K = 37 odd, M = 61 and N = 10 not
// whole tiles: padded to 64 x 64 (K), 64 rows and 16 columns.
// CHECK-LABEL: func.func @transposed_a_awkward
// CHECK: memref.alloc() : memref<64x64xbf16>
// CHECK: linalg.fill
// CHECK: memref.alloc() : memref<32x16x2xbf16>
// CHECK: memref.alloc() : memref<64x16xf32>
// CHECK: scf.forall (%{{.*}}) = (0) to (64) step (16)
// CHECK: amx.tile_mulf
// CHECK-NOT: linalg.matmul
func.func @transposed_a_awkward(%a: memref<37x61xbf16>, %b: memref<37x10xbf16>, %c: memref<61x10xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<37x61xbf16>, memref<37x10xbf16>) outs(%c : memref<61x10xf32>)
  return
}

// f32 products are not touched.
// CHECK-LABEL: func.func @f32_product
// CHECK-NOT: amx.
// CHECK: vector.fma
func.func @f32_product(%a: memref<32x64xf32>, %b: memref<64x32xf32>, %c: memref<32x32xf32>) {
  linalg.matmul ins(%a, %b : memref<32x64xf32>, memref<64x32xf32>) outs(%c : memref<32x32xf32>)
  return
}

// A weight's bf16 copy that only this product reads is packed straight
// from the f32 weight (rounded as it is copied), as on vdpbf16ps: the
// rounding loop and its buffer are gone.
// CHECK-LABEL: func.func @rounded_weight
// CHECK-NOT: memref<37x10xbf16>
// CHECK: linalg.generic {{.*}} ins(%arg1 : memref<10x37xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: amx.tile_mulf
// CHECK-NOT: memref<37x10xbf16>
// CHECK: return
#wt = affine_map<(d0, d1) -> (d1, d0)>
#id2w = affine_map<(d0, d1) -> (d0, d1)>
func.func @rounded_weight(%a: memref<64x37xbf16>, %w: memref<10x37xf32>, %c: memref<64x10xf32>) {
  %wb = memref.alloc() : memref<37x10xbf16>
  linalg.generic {indexing_maps = [#wt, #id2w], iterator_types = ["parallel", "parallel"]} ins(%w : memref<10x37xf32>) outs(%wb : memref<37x10xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.matmul ins(%a, %wb : memref<64x37xbf16>, memref<37x10xbf16>) outs(%c : memref<64x10xf32>)
  memref.dealloc %wb : memref<37x10xbf16>
  return
}
