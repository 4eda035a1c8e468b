// bf16 x bf16 -> f32 products on AVX512-BF16 dot products (bf16-dot=true,
// amx off): B packed as pairs along K ([K/2][N'][2], zero padded), A's
// pairs read in place where they are adjacent (row-major, K even) and
// packed otherwise, output tiles in an scf.forall, register tiles of C
// carried across the K pairs and updated by x86vector.avx512.dot. Awkward
// sizes: K odd, M = 61 (a remainder of rows), N = 10 (one masked vector).
// With amx=true the AMX path wins; f16 and strided-row products are
// widened to f32.
// RUN: tgc-opt %s --tgc-vectorize-matmuls="bf16-dot=true vector-bits=512 vector-registers=32 tiles=32,64,64,4,32 fill-tiles=true" --canonicalize | FileCheck %s
// RUN: tgc-opt %s --tgc-vectorize-matmuls="bf16-dot=true vector-bits=512 vector-registers=32 tiles=32,64,64,4,32" --canonicalize | FileCheck %s --check-prefix=NOFUSE
// RUN: tgc-opt %s --tgc-vectorize-matmuls="bf16-dot=true amx=true vector-bits=512 vector-registers=32" | FileCheck %s --check-prefix=AMX
// RUN: tgc-opt %s --tgc-vectorize-matmuls="bf16-dot=true vector-bits=256 vector-registers=16" | FileCheck %s --check-prefix=AVX2

// CHECK-LABEL: func.func @row_major
// CHECK-NOT: memref<64x256xbf16> to
// CHECK: %[[BP:.*]] = memref.alloc() : memref<128x128x2xbf16>
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<256x128xbf16>)
// CHECK: scf.forall (%[[I0:.*]], %[[J0:.*]]) = (0, 0) to (64, 128) step (32, 64)
// CHECK: scf.for %[[K0:.*]] = %c0 to %c128 step %c64
// CHECK: scf.for %[[J:.*]] = %[[J0]] to %{{.*}} step %c32
// CHECK: scf.for %[[I:.*]] = %[[I0]] to %{{.*}} step %c4
// CHECK-COUNT-8: vector.load %arg2[{{.*}}] : memref<64x128xf32>, vector<16xf32>
// CHECK: scf.for %[[KK:.*]] = %[[K0]] to %{{.*}} step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.load %[[BP]][%[[KK]], {{.*}}] : memref<128x128x2xbf16>, vector<32xbf16>
// CHECK: vector.load %[[BP]][%[[KK]], {{.*}}] : memref<128x128x2xbf16>, vector<32xbf16>
// CHECK: %[[PAIR:.*]] = vector.load %arg0[%[[I]], {{.*}}] : memref<64x256xbf16>, vector<2xbf16>
// CHECK: %[[WORD:.*]] = vector.bitcast %[[PAIR]] : vector<2xbf16> to vector<1xi32>
// CHECK: %[[SCALAR:.*]] = vector.extract %[[WORD]][0] : i32 from vector<1xi32>
// CHECK: %[[ALL:.*]] = vector.broadcast %[[SCALAR]] : i32 to vector<16xi32>
// CHECK: %[[AS:.*]] = vector.bitcast %[[ALL]] : vector<16xi32> to vector<32xbf16>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[AS]], %{{.*}} : vector<32xbf16> -> vector<16xf32>
// CHECK-COUNT-7: x86vector.avx512.dot
// CHECK: scf.yield
// CHECK-COUNT-8: vector.store %{{.*}}, %arg2[{{.*}}] : memref<64x128xf32>, vector<16xf32>
// CHECK-NOT: scf.if
// CHECK-NOT: linalg.matmul
// CHECK: return
// AMX-LABEL: func.func @row_major
// AMX: amx.tile_mulf
// AMX-NOT: x86vector
// AVX2-LABEL: func.func @row_major
// AVX2-NOT: x86vector
// AVX2: arith.extf %{{.*}} : bf16 to f32
func.func @row_major(%a: memref<64x256xbf16>, %b: memref<256x128xbf16>, %c: memref<64x128xf32>) {
  linalg.matmul ins(%a, %b : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  return
}

// A read as [K, M] (a weight gradient) with K = 37: packed as pairs along K
// like B ([19][61][2], two rows interleaved, not a transpose), a zero after
// K only in the padding; 61 rows = 15 tiles of 4 and a 1-row remainder
// under scf.if; 10 columns = one masked vector (B's columns 10-15 zero).
// CHECK-LABEL: func.func @transposed_a_awkward
// CHECK: %[[MASK:.*]] = arith.constant dense<[true, true, true, true, true, true, true, true, true, true, false, false, false, false, false, false]> : vector<16xi1>
// CHECK: %[[AP:.*]] = memref.alloc() : memref<19x61x2xbf16>
// CHECK: %[[APAD:.*]] = memref.subview %[[AP]][18, 0, 1] [1, 61, 1]
// CHECK: linalg.fill {{.*}} outs(%[[APAD]] :
// CHECK: linalg.generic {{.*}} ins(%arg0 : memref<37x61xbf16>)
// CHECK: %[[BP:.*]] = memref.alloc() : memref<19x16x2xbf16>
// CHECK: %[[BPAD:.*]] = memref.subview %[[BP]][0, 10, 0] [19, 6, 2]
// CHECK: linalg.fill {{.*}} outs(%[[BPAD]] :
// CHECK: scf.forall (%{{.*}}) = (0) to (61) step (32)
// CHECK: vector.maskedload %arg2[{{.*}}], %[[MASK]]
// CHECK: scf.for {{.*}} = %c0 to %c19 step %c1
// CHECK: vector.load %[[AP]]
// CHECK: x86vector.avx512.dot
// CHECK: vector.maskedstore %arg2
// CHECK: scf.if
// CHECK: vector.maskedload
// CHECK: x86vector.avx512.dot
// CHECK-NOT: x86vector.avx512.dot
// CHECK: vector.maskedstore
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @transposed_a_awkward(%a: memref<37x61xbf16>, %b: memref<37x10xbf16>, %c: memref<61x10xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<37x61xbf16>, memref<37x10xbf16>) outs(%c : memref<61x10xf32>)
  return
}

// f16 operands, and C with rows of non-unit stride: widened to f32.
// CHECK-LABEL: func.func @f16_product
// CHECK-NOT: x86vector
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK-LABEL: func.func @strided_rows
// CHECK-NOT: x86vector
// CHECK: arith.extf %{{.*}} : bf16 to f32
func.func @f16_product(%a: memref<16x32xf16>, %b: memref<32x16xf16>, %c: memref<16x16xf32>) {
  linalg.matmul ins(%a, %b : memref<16x32xf16>, memref<32x16xf16>) outs(%c : memref<16x16xf32>)
  return
}
func.func @strided_rows(%a: memref<16x32xbf16>, %b: memref<32x16xbf16>, %c: memref<16x16xf32, strided<[1, 16]>>) {
  linalg.matmul ins(%a, %b : memref<16x32xbf16>, memref<32x16xbf16>) outs(%c : memref<16x16xf32, strided<[1, 16]>>)
  return
}

// A read as [M, K] with K = 37 odd: packed [8][38] with a zero written only
// into its last column (the pair after K), then the dot products.
// CHECK-LABEL: func.func @odd_k_row_major
// CHECK: %[[AP:.*]] = memref.alloc() : memref<8x38xbf16>
// CHECK: %[[APAD:.*]] = memref.subview %[[AP]][0, 37] [8, 1] [1, 1]
// CHECK: linalg.fill {{.*}} outs(%[[APAD]] :
// CHECK-NOT: linalg.fill {{.*}} outs(%[[AP]] :
// CHECK: linalg.generic {{.*}} ins(%arg0 : memref<8x37xbf16>)
// CHECK: x86vector.avx512.dot
func.func @odd_k_row_major(%a: memref<8x37xbf16>, %b: memref<37x16xbf16>, %c: memref<8x16xf32>) {
  linalg.matmul ins(%a, %b : memref<8x37xbf16>, memref<37x16xbf16>) outs(%c : memref<8x16xf32>)
  return
}

// C filled with a constant just before the product: with fill-tiles the
// fill goes, and the register tiles start from the constant in the first
// block of K pairs (K0 = 0) and load C in the later ones; without, the fill
// stays.
// NOFUSE-LABEL: func.func @filled_output
// NOFUSE: linalg.fill
// NOFUSE-NOT: scf.if
// NOFUSE: x86vector.avx512.dot
// CHECK-LABEL: func.func @filled_output
// CHECK-DAG: %[[INIT:.*]] = arith.constant dense<2.500000e-01> : vector<16xf32>
// CHECK-NOT: linalg.fill
// CHECK: scf.for %[[K0:.*]] = %c0 to %c128 step %c64
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[K0]], %c0 : index
// CHECK: scf.if %[[FIRST]] -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-NEXT: scf.yield %[[INIT]], %[[INIT]], %[[INIT]], %[[INIT]], %[[INIT]], %[[INIT]], %[[INIT]], %[[INIT]]
// CHECK-NEXT: } else {
// CHECK-COUNT-8: vector.load %arg2
// CHECK: x86vector.avx512.dot
// CHECK-NOT: linalg.fill
// CHECK: return
// An empty product (K = 0) is left to the loops, its fill with it (on
// every path), as is an empty f32 product.
// CHECK-LABEL: func.func @filled_empty_k
// CHECK: linalg.fill
// CHECK-NOT: x86vector
// AMX-LABEL: func.func @filled_empty_k
// AMX-NOT: amx.
// AVX2-LABEL: func.func @filled_empty_k
// AVX2: linalg.fill
func.func @filled_output(%a: memref<64x256xbf16>, %b: memref<256x128xbf16>, %c: memref<64x128xf32>) {
  %init = arith.constant 0.25 : f32
  linalg.fill ins(%init : f32) outs(%c : memref<64x128xf32>)
  linalg.matmul ins(%a, %b : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  return
}
func.func @filled_empty_k(%a: memref<8x0xbf16>, %b: memref<0x16xbf16>, %c: memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%a, %b : memref<8x0xbf16>, memref<0x16xbf16>) outs(%c : memref<8x16xf32>)
  return
}
// CHECK-LABEL: func.func @empty_f32
// CHECK: linalg.fill
// CHECK-NOT: vector.
// CHECK: return
func.func @empty_f32(%a: memref<8x0xf32>, %b: memref<0x16xf32>, %c: memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%a, %b : memref<8x0xf32>, memref<0x16xf32>) outs(%c : memref<8x16xf32>)
  return
}

// An f32 activation that one loop (a row loop) writes and only a cast to
// bf16 reads: the loop stores bf16 into a buffer the product reads, and
// the f32 buffer and the cast are gone. With another reader, the loop
// stores both.
// AMX-LABEL: func.func @narrowed_in_producer
// CHECK-LABEL: func.func @narrowed_in_producer
// CHECK: %[[XB:.*]] = memref.alloc() : memref<64x256xbf16>
// CHECK: scf.for
// CHECK: %[[XS:.*]] = memref.subview %[[XB]]
// CHECK: linalg.generic {{.*}} outs(%[[XS]] : memref<8x256xbf16, strided<[256, 1], offset: ?>>)
// CHECK: %[[V:.*]] = arith.mulf
// CHECK: %[[R:.*]] = arith.truncf %[[V]] : f32 to bf16
// CHECK: linalg.yield %[[R]] : bf16
// CHECK-NOT: memref<64x256xf32>
// CHECK: vector.load %[[XB]][{{.*}}] : memref<64x256xbf16>, vector<2xbf16>
// CHECK: return
func.func @narrowed_in_producer(%a: memref<64x256xf32>, %w: memref<256x128xbf16>, %c: memref<64x128xf32>) {
  %x = memref.alloc() : memref<64x256xf32>
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c64 step %c8 {
    %as = memref.subview %a[%i, 0] [8, 256] [1, 1] : memref<64x256xf32> to memref<8x256xf32, strided<[256, 1], offset: ?>>
    %xs = memref.subview %x[%i, 0] [8, 256] [1, 1] : memref<64x256xf32> to memref<8x256xf32, strided<[256, 1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
        ins(%as : memref<8x256xf32, strided<[256, 1], offset: ?>>) outs(%xs : memref<8x256xf32, strided<[256, 1], offset: ?>>) {
    ^bb0(%in: f32, %out: f32):
      %s = arith.mulf %in, %in : f32
      linalg.yield %s : f32
    }
  }
  %xb = memref.alloc() : memref<64x256xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x256xf32>) outs(%xb : memref<64x256xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.matmul ins(%xb, %w : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  return
}

// The same where a copy in parallel tasks writes the f32 buffer (each
// task one head's columns of [B, S, H, D]) and the cast reads it through
// a reshape: each copy stores bf16 into the same view of a bf16 buffer.
// CHECK-LABEL: func.func @narrowed_in_task_copy
// CHECK: %[[XB:.*]] = memref.alloc() : memref<2x16x4x8xbf16>
// CHECK: scf.forall
// CHECK: %[[XS:.*]] = memref.subview %[[XB]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<16x8xf32>) outs(%[[XS]] : memref<16x8xbf16, strided<[32, 1], offset: ?>>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: memref<2x16x4x8xf32>
// CHECK: return
func.func @narrowed_in_task_copy(%v: memref<2x4x16x8xf32>, %w: memref<32x16xbf16>, %c: memref<32x16xf32>) {
  %x = memref.alloc() : memref<2x16x4x8xf32>
  scf.forall (%b, %h) in (2, 4) {
    %vs = memref.subview %v[%b, %h, 0, 0] [1, 1, 16, 8] [1, 1, 1, 1] : memref<2x4x16x8xf32> to memref<16x8xf32, strided<[8, 1], offset: ?>>
    %t = memref.alloc() : memref<16x8xf32>
    linalg.copy ins(%vs : memref<16x8xf32, strided<[8, 1], offset: ?>>) outs(%t : memref<16x8xf32>)
    %xs = memref.subview %x[%b, 0, %h, 0] [1, 16, 1, 8] [1, 1, 1, 1] : memref<2x16x4x8xf32> to memref<16x8xf32, strided<[32, 1], offset: ?>>
    linalg.copy ins(%t : memref<16x8xf32>) outs(%xs : memref<16x8xf32, strided<[32, 1], offset: ?>>)
  }
  %x2 = memref.collapse_shape %x [[0, 1], [2, 3]] : memref<2x16x4x8xf32> into memref<32x32xf32>
  %xb = memref.alloc() : memref<32x32xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x2 : memref<32x32xf32>) outs(%xb : memref<32x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.matmul ins(%xb, %w : memref<32x32xbf16>, memref<32x16xbf16>) outs(%c : memref<32x16xf32>)
  return
}

// CHECK-LABEL: func.func @narrowed_beside_other_reader
// CHECK: %[[X:.*]] = memref.alloc() : memref<64x256xf32>
// CHECK: %[[XB:.*]] = memref.alloc() : memref<64x256xbf16>
// CHECK: linalg.generic {{.*}} outs(%[[X]], %[[XB]] : memref<64x256xf32>, memref<64x256xbf16>)
// CHECK: %[[V:.*]] = arith.mulf
// CHECK: %[[R:.*]] = arith.truncf %[[V]] : f32 to bf16
// CHECK: linalg.yield %[[V]], %[[R]] : f32, bf16
// CHECK: linalg.generic {{.*}} ins(%[[X]] : memref<64x256xf32>) outs(%arg3 : memref<64xf32>)
// CHECK-NOT: arith.truncf
// CHECK: vector.load %[[XB]][{{.*}}] : memref<64x256xbf16>, vector<2xbf16>
// CHECK: return
func.func @narrowed_beside_other_reader(%a: memref<64x256xf32>, %w: memref<256x128xbf16>, %c: memref<64x128xf32>, %sum: memref<64xf32>) {
  %x = memref.alloc() : memref<64x256xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<64x256xf32>) outs(%x : memref<64x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x256xf32>) outs(%sum : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  %xb = memref.alloc() : memref<64x256xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x256xf32>) outs(%xb : memref<64x256xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.matmul ins(%xb, %w : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  return
}

// A weight's bf16 copy (W is [N, K] in f32, rounded and transposed into
// [K, N] for this product alone, K = 37 odd): B is packed straight from W,
// rounding as it copies, and the rounding loop and its buffer are gone.
// CHECK-LABEL: func.func @rounded_weight
// CHECK-NOT: memref<37x10xbf16>
// CHECK: %[[BP:.*]] = memref.alloc() : memref<19x16x2xbf16>
// CHECK: linalg.generic {{.*}} ins(%arg1 : memref<10x37xf32>) outs(%{{.*}} : memref<18x10x2xbf16, {{.*}}>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: linalg.generic {{.*}} ins(%arg1 : memref<10x37xf32>) outs(%{{.*}} : memref<1x10x1xbf16, {{.*}}>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: scf.forall
// CHECK: x86vector.avx512.dot
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

// The copy stays where something writes W between the rounding and the
// product (the packing would read the new values), and where another op
// reads the copy.
// CHECK-LABEL: func.func @rounded_weight_kept
// CHECK: %[[WB:.*]] = memref.alloc() : memref<37x10xbf16>
// CHECK: linalg.generic {{.*}} ins(%arg1 : memref<10x37xf32>) outs(%[[WB]] : memref<37x10xbf16>)
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} ins(%[[WB]] : memref<37x10xbf16>)
// CHECK: %[[WB2:.*]] = memref.alloc() : memref<37x10xbf16>
// CHECK: linalg.generic {{.*}} ins(%arg1 : memref<10x37xf32>) outs(%[[WB2]] : memref<37x10xbf16>)
// CHECK: memref.copy %[[WB2]]
// CHECK: linalg.generic {{.*}} ins(%[[WB2]] : memref<37x10xbf16>)
func.func @rounded_weight_kept(%a: memref<64x37xbf16>, %w: memref<10x37xf32>, %c: memref<64x10xf32>, %d: memref<37x10xbf16>) {
  %zero = arith.constant 0.0 : f32
  %wb = memref.alloc() : memref<37x10xbf16>
  linalg.generic {indexing_maps = [#wt, #id2w], iterator_types = ["parallel", "parallel"]} ins(%w : memref<10x37xf32>) outs(%wb : memref<37x10xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.fill ins(%zero : f32) outs(%w : memref<10x37xf32>)
  linalg.matmul ins(%a, %wb : memref<64x37xbf16>, memref<37x10xbf16>) outs(%c : memref<64x10xf32>)
  %wb2 = memref.alloc() : memref<37x10xbf16>
  linalg.generic {indexing_maps = [#wt, #id2w], iterator_types = ["parallel", "parallel"]} ins(%w : memref<10x37xf32>) outs(%wb2 : memref<37x10xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.copy %wb2, %d : memref<37x10xbf16> to memref<37x10xbf16>
  linalg.matmul ins(%a, %wb2 : memref<64x37xbf16>, memref<37x10xbf16>) outs(%c : memref<64x10xf32>)
  return
}

// The loop that reads the product's output right after it (its epilogue,
// tgc::findEpilogue) runs on each output tile after the tile's last block
// of K pairs, while the tile is in cache: here the bf16 copy of the output
// that the backward keeps (SwiGLU's gate and up), the f32 output still read
// later. Without fill-tiles, and on AMX tiles, it stays a pass of its own.
// CHECK-LABEL: func.func @epilogue_saves_copy
// CHECK: scf.forall (%[[I0:.*]], %[[J0:.*]]) = (0, 0) to (64, 128) step (32, 64)
// CHECK: x86vector.avx512.dot
// CHECK: %[[TILE:.*]] = memref.subview %[[C:.*]][%[[I0]], %[[J0]]] [32, 64] [1, 1] : memref<64x128xf32> to memref<32x64xf32, strided<[128, 1], offset: ?>>
// CHECK: %[[COPY:.*]] = memref.subview %arg2[%[[I0]], %[[J0]]] [32, 64] [1, 1] : memref<64x128xbf16> to memref<32x64xbf16, strided<[128, 1], offset: ?>>
// CHECK: linalg.generic {{.*}} ins(%[[TILE]] : memref<32x64xf32, strided<[128, 1], offset: ?>>) outs(%[[COPY]] : memref<32x64xbf16, strided<[128, 1], offset: ?>>)
// CHECK: arith.truncf
// CHECK-NOT: linalg.generic {{.*}} outs(%arg2
// CHECK: linalg.generic {{.*}} ins(%[[C]] : memref<64x128xf32>) outs(%arg3
// CHECK: return
// NOFUSE-LABEL: func.func @epilogue_saves_copy
// NOFUSE: x86vector.avx512.dot
// NOFUSE: linalg.generic {{.*}} ins(%{{.*}} : memref<64x128xf32>) outs(%arg2 : memref<64x128xbf16>)
// AMX-LABEL: func.func @epilogue_saves_copy
// AMX: amx.tile_mulf
// AMX: linalg.generic {{.*}} ins(%{{.*}} : memref<64x128xf32>) outs(%arg2 : memref<64x128xbf16>)
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @epilogue_saves_copy(%a: memref<64x256xbf16>, %b: memref<256x128xbf16>, %saved: memref<64x128xbf16>, %out: memref<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<64x128xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<64x128xf32>)
  linalg.matmul ins(%a, %b : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%c : memref<64x128xf32>) outs(%saved : memref<64x128xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%c : memref<64x128xf32>) outs(%out : memref<64x128xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<64x128xf32>
  return
}

// An epilogue that updates the output in place (a scale), on M = 61 and
// N = 10 (a partial last tile of rows: its size is computed).
// CHECK-LABEL: func.func @epilogue_in_place
// CHECK: scf.forall (%[[I0:.*]]) = (0) to (61) step (32)
// CHECK: %[[END:.*]] = arith.minsi %{{.*}}, %c61 : index
// CHECK: %[[ROWS:.*]] = arith.subi %[[END]], %[[I0]] : index
// CHECK: x86vector.avx512.dot
// CHECK: %[[TILE:.*]] = memref.subview %{{.*}}[%[[I0]], 0] [%[[ROWS]], 10] [1, 1]
// CHECK: linalg.generic {{.*}} outs(%[[TILE]] : memref<?x10xf32, strided<[10, 1], offset: ?>>)
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: memref.copy
func.func @epilogue_in_place(%a: memref<61x38xbf16>, %b: memref<38x10xbf16>, %out: memref<61x10xf32>) {
  %half = arith.constant 0.5 : f32
  %c = memref.alloc() : memref<61x10xf32>
  linalg.matmul ins(%a, %b : memref<61x38xbf16>, memref<38x10xbf16>) outs(%c : memref<61x10xf32>)
  linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%c : memref<61x10xf32>) {
  ^bb0(%o: f32):
    %s = arith.mulf %o, %half : f32
    linalg.yield %s : f32
  }
  memref.copy %c, %out : memref<61x10xf32> to memref<61x10xf32>
  memref.dealloc %c : memref<61x10xf32>
  return
}

// A bf16 weight W [37, 70] transposed into a copy for this product alone
// (a frozen bf16 weight, generation's bf16 weights): the product reads W as
// [N, K] instead, and its pairs along K (32-bit words of W's rows) are
// packed by a transpose of words in 16 x 16 register blocks (35 pairs: two
// blocks of 16 rows of W, two of pairs), the edges (W's last 5 rows, the
// last 3 pairs) by loops. No transposed copy is left.
// CHECK-LABEL: func.func @transposed_weight
// CHECK-NOT: linalg.transpose
// CHECK: %[[BP:.*]] = memref.alloc() : memref<35x48x2xbf16>
// CHECK: %[[WORDS:.*]] = memref.collapse_shape %[[BP]] {{\[}}[0], [1, 2]] : memref<35x48x2xbf16> into memref<35x96xbf16>
// CHECK: scf.forall (%{{.*}}) in (2) {
// CHECK: vector.transfer_read %arg1[%{{.*}}, %{{.*}}], %{{.*}} {in_bounds = [true, true]} : memref<37x70xbf16>, vector<16x32xbf16>
// CHECK: vector.bitcast %{{.*}} : vector<16x32xbf16> to vector<16x16xf32>
// CHECK: vector.shuffle
// CHECK: vector.bitcast %{{.*}} : vector<16x16xf32> to vector<16x32xbf16>
// CHECK: vector.transfer_write %{{.*}}, %[[WORDS]]
// CHECK: memref.subview %[[BP]][0, 32, 0] [32, 5, 2] [1, 1, 1]
// CHECK: linalg.generic {{.*}} ins(%arg1 : memref<37x70xbf16>)
// CHECK: memref.subview %[[BP]][32, 0, 0] [3, 37, 2] [1, 1, 1]
// CHECK: linalg.generic {{.*}} ins(%arg1 : memref<37x70xbf16>)
// CHECK: x86vector.avx512.dot
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @transposed_weight(%x: memref<64x70xbf16>, %w: memref<37x70xbf16>, %y: memref<64x37xf32>) {
  %t = memref.alloc() : memref<70x37xbf16>
  linalg.transpose ins(%w : memref<37x70xbf16>) outs(%t : memref<70x37xbf16>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<64x70xbf16>, memref<70x37xbf16>) outs(%y : memref<64x37xf32>)
  memref.dealloc %t : memref<70x37xbf16>
  return
}
