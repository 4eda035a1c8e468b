// tgc-vectorize-matmuls: every static matmul, whatever its shape, gets
// parallel output tiles (scf.forall), register tiles of vector FMAs and
// remainders in whole vectors and single rows; no linalg.matmul is left for
// the scalar loops. The tile model's inputs are given explicitly, so the
// output does not depend on the machine running the test.
// RUN: tgc-opt %s --tgc-vectorize-matmuls="vector-bits=512 vector-registers=32 l1-cache-bytes=32768 l2-cache-bytes=1048576" --canonicalize --cse | FileCheck %s
// RUN: tgc-opt %s --tgc-vectorize-matmuls="vector-bits=256 vector-registers=16" --canonicalize --cse | FileCheck %s --check-prefix=AVX2
// RUN: tgc-opt %s --tgc-vectorize-matmuls="tiles=16,32,8,2,16" --canonicalize --cse | FileCheck %s --check-prefix=FORCED
// RUN: not tgc-opt %s --tgc-vectorize-matmuls="tiles=16,32" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: tgc-vectorize-matmuls: tiles=16,32 is not MT,NT,KT,MR,NR (five positive integers)
// RUN: not tgc-opt %s --tgc-vectorize-matmuls="tiles=64,64,64,64,64" 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not tgc-opt %s --tgc-vectorize-matmuls="vector-bits=512 tiles=64,96,64,8,48" 2>&1 | FileCheck %s --check-prefix=THREE
// THREE: error: tgc-vectorize-matmuls: register tile columns 48 are 3 vectors of 16 lanes: use 1, 2, 4 or 8 vectors
// RUN: tgc-opt %s --split-input-file --tgc-vectorize-matmuls="fill-tiles=true" --canonicalize --cse 2>&1 | FileCheck %s --check-prefix=TILEFILL
// RUN: tgc-opt %s --split-input-file --tgc-vectorize-matmuls="fill-tiles=true tiles=16,32,8,2,16" --canonicalize --cse 2>&1 | FileCheck %s --check-prefix=SHIFT
// RUN: tgc-opt %s --split-input-file --tgc-vectorize-matmuls="fill-tiles=true bf16-dot=true vector-bits=512 vector-registers=32" --canonicalize --cse 2>&1 | FileCheck %s --check-prefix=DOTEPI
// HUGE: error: tgc-vectorize-matmuls: register tile 64x64 is too large (at most 16 rows and 128 columns)

// 512-bit model: 6 x 64 register tile (24 accumulators), 4 FMAs per row.
// AVX2 model: 6 x 16 register tile (12 accumulators): 4 x 24 would load
// less per FMA, but a row of 3 vectors is not kept in registers.
// CHECK-LABEL: func.func @plain
// CHECK: scf.forall
// CHECK: vector.fma {{.*}} : vector<64xf32>
// CHECK-NOT: linalg.matmul
// AVX2-LABEL: func.func @plain
// AVX2-NOT: vector<24xf32>
// AVX2: vector.fma {{.*}} : vector<16xf32>
// AVX2-NOT: vector<24xf32>
// AVX2-LABEL: func.func @transposed_b
// FORCED-LABEL: func.func @plain
// FORCED: vector.fma {{.*}} : vector<16xf32>
func.func @plain(%a: memref<64x256xf32>, %b: memref<256x128xf32>, %c: memref<64x128xf32>) {
  linalg.matmul ins(%a, %b : memref<64x256xf32>, memref<256x128xf32>) outs(%c : memref<64x128xf32>)
  return
}

// N = 40 is 3 vectors of 16 rounded up: the register tile takes 2 (32
// columns), and the last 8 columns are a peeled whole vector.
// CHECK-LABEL: func.func @three_vectors_wide
// CHECK-NOT: vector<48xf32>
// CHECK: vector.fma {{.*}} : vector<32xf32>
// CHECK-NOT: vector<48xf32>
// CHECK: vector.fma {{.*}} : vector<8xf32>
// CHECK-NOT: vector<48xf32>
func.func @three_vectors_wide(%a: memref<64x256xf32>, %b: memref<256x40xf32>, %c: memref<64x40xf32>) {
  linalg.matmul ins(%a, %b : memref<64x256xf32>, memref<256x40xf32>) outs(%c : memref<64x40xf32>)
  return
}

// CHECK-LABEL: func.func @transposed_b
// CHECK: vector.fma
// CHECK-NOT: linalg.matmul
func.func @transposed_b(%a: memref<64x256xf32>, %b: memref<128x256xf32>, %c: memref<64x128xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<64x256xf32>, memref<128x256xf32>) outs(%c : memref<64x128xf32>)
  return
}

// CHECK-LABEL: func.func @transposed_a
// CHECK: vector.fma
// CHECK-NOT: linalg.matmul
func.func @transposed_a(%a: memref<256x64xf32>, %b: memref<256x128xf32>, %c: memref<64x128xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<256x64xf32>, memref<256x128xf32>) outs(%c : memref<64x128xf32>)
  return
}

// A classifier's 10 columns: 8 x 10 tiles, static, the accumulators
// carried through the K loop.
// CHECK-LABEL: func.func @narrow
// CHECK: vector.transfer_read {{.*}} : memref<64x10xf32>, vector<8x10xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8x10xf32>)
// CHECK: vector.fma {{.*}} : vector<10xf32>
// CHECK-NOT: linalg.matmul
func.func @narrow(%a: memref<64x256xf32>, %b: memref<256x10xf32>, %c: memref<64x10xf32>) {
  linalg.matmul ins(%a, %b : memref<64x256xf32>, memref<256x10xf32>) outs(%c : memref<64x10xf32>)
  return
}

// Primes everywhere: 8-row tiles of two whole 16-lane vectors (37 columns
// round up to 3 vectors, down to a power of two: 2), then the last 5
// columns, then the last 5 rows one at a time; every tile static, every
// accumulator carried through the K loop.
// CHECK-LABEL: func.func @primes
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8x32xf32>)
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8x5xf32>)
// CHECK-COUNT-8: vector.fma {{.*}} : vector<5xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<1x32xf32>)
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<1x5xf32>)
// CHECK-NOT: vector.create_mask
// CHECK-NOT: linalg.matmul
func.func @primes(%a: memref<37x17xf32>, %b: memref<17x37xf32>, %c: memref<37x37xf32>) {
  linalg.matmul ins(%a, %b : memref<37x17xf32>, memref<17x37xf32>) outs(%c : memref<37x37xf32>)
  return
}

// One row (a GEMV) against GPT-2's vocabulary: 1 x 64 tiles, no wasted
// rows; the tiles' boundaries are dynamic, so the last columns are masked.
// CHECK-LABEL: func.func @one_row_vocab
// CHECK: scf.forall
// CHECK: vector.fma {{.*}} : vector<64xf32>
// CHECK: vector.create_mask {{.*}} : vector<16xi1>
// CHECK-NOT: vector<6x
// CHECK-NOT: linalg.matmul
func.func @one_row_vocab(%a: memref<1x64xf32>, %b: memref<64x50257xf32>, %c: memref<1x50257xf32>) {
  linalg.matmul ins(%a, %b : memref<1x64xf32>, memref<64x50257xf32>) outs(%c : memref<1x50257xf32>)
  return
}

// Attention's products: batch entries and output tiles in one forall, each
// tile a rank-reduced 2-D matmul.
// CHECK-LABEL: func.func @batched
// CHECK: scf.forall {{.*}} in (6)
// CHECK: vector.fma {{.*}} : vector<32xf32>
// CHECK-NOT: linalg.batch_matmul
func.func @batched(%a: memref<6x37x16xf32>, %b: memref<6x16x37xf32>, %c: memref<6x37x37xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<6x37x16xf32>, memref<6x16x37xf32>) outs(%c : memref<6x37x37xf32>)
  return
}

// Attention's gradient products read a score tile transposed (dV += Pᵀ·dO):
// the same forall over batch entries and tiles, with vector FMAs and no
// scalar multiplies.
// CHECK-LABEL: func.func @batched_transposed_lhs
// CHECK: scf.forall {{.*}} in (6)
// CHECK: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT: linalg.batch_matmul
// CHECK-NOT: arith.mulf
// CHECK: return
#lhsT = affine_map<(b, m, n, k) -> (b, k, m)>
#rhs = affine_map<(b, m, n, k) -> (b, k, n)>
#out = affine_map<(b, m, n, k) -> (b, m, n)>
func.func @batched_transposed_lhs(%p: memref<6x37x37xf32>, %d: memref<6x37x16xf32>, %c: memref<6x37x16xf32>) {
  linalg.batch_matmul indexing_maps = [#lhsT, #rhs, #out] ins(%p, %d : memref<6x37x37xf32>, memref<6x37x16xf32>) outs(%c : memref<6x37x16xf32>)
  return
}

// Mixed precision: each bf16 operand is widened into an f32 buffer once,
// and the product is scheduled as an f32 one (f32 FMAs, no scalar
// multiplies), also for a transposed A and prime sizes.
// CHECK-LABEL: func.func @bf16_operands
// CHECK: %[[A:.*]] = memref.alloc() : memref<64x256xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<64x256xbf16>) outs(%[[A]] : memref<64x256xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[B:.*]] = memref.alloc() : memref<256x128xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<256x128xbf16>) outs(%[[B]] : memref<256x128xf32>)
// CHECK: vector.fma {{.*}} : vector<64xf32>
// CHECK-NOT: arith.mulf
// CHECK-NOT: linalg.matmul
// CHECK-LABEL: func.func @bf16_transposed_a_odd
// CHECK: vector.fma
// CHECK-NOT: arith.mulf
// CHECK-NOT: linalg.matmul
// Products reading the same bf16 buffer share its widened copy, until
// something may write that buffer (here a copy into a view of it).
// CHECK-LABEL: func.func @bf16_shared_operand
// CHECK-COUNT-2: memref.alloc() : memref<64x256xf32>
// CHECK-NOT: memref.alloc() : memref<64x256xf32>
// CHECK-LABEL: func.func @after_bf16
func.func @bf16_operands(%a: memref<64x256xbf16>, %b: memref<256x128xbf16>, %c: memref<64x128xf32>) {
  linalg.matmul ins(%a, %b : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  return
}
func.func @bf16_transposed_a_odd(%a: memref<37x61xbf16>, %b: memref<37x53xbf16>, %c: memref<61x53xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
    ins(%a, %b : memref<37x61xbf16>, memref<37x53xbf16>) outs(%c : memref<61x53xf32>)
  return
}
func.func @bf16_shared_operand(%x: memref<64x256xbf16>, %wq: memref<256x128xbf16>, %wk: memref<256x128xbf16>, %wv: memref<256x128xbf16>,
                               %q: memref<64x128xf32>, %k: memref<64x128xf32>, %v: memref<64x128xf32>, %row: memref<256xbf16>) {
  linalg.matmul ins(%x, %wq : memref<64x256xbf16>, memref<256x128xbf16>) outs(%q : memref<64x128xf32>)
  linalg.matmul ins(%x, %wk : memref<64x256xbf16>, memref<256x128xbf16>) outs(%k : memref<64x128xf32>)
  %r = memref.subview %x[3, 0] [1, 256] [1, 1] : memref<64x256xbf16> to memref<256xbf16, strided<[1], offset: 768>>
  memref.copy %row, %r : memref<256xbf16> to memref<256xbf16, strided<[1], offset: 768>>
  linalg.matmul ins(%x, %wv : memref<64x256xbf16>, memref<256x128xbf16>) outs(%v : memref<64x128xf32>)
  return
}
func.func @after_bf16() {
  return
}

// A bf16 weight transposed into a buffer of its own that only widened
// products read: widened while it is transposed (one f32 buffer, no bf16
// copy, a generic tgc-vectorize-transposes takes in register blocks). A
// transposed buffer something else reads too stays, widened after.
// CHECK-LABEL: func.func @bf16_transposed_weight
// CHECK-SAME: (%{{.*}}: memref<64x256xbf16>, %[[W:.*]]: memref<128x256xbf16>,
// CHECK-NOT: memref<256x128xbf16>
// CHECK: %[[T:.*]] = memref.alloc() : memref<256x128xf32>
// CHECK: linalg.generic {indexing_maps = [#[[SWAP:.*]], #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[W]] : memref<128x256xbf16>) outs(%[[T]] : memref<256x128xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK-NOT: memref<256x128xbf16>
// CHECK: vector.fma
// CHECK-LABEL: func.func @bf16_transpose_read_elsewhere
// CHECK: %[[T:.*]] = memref.alloc() : memref<256x128xbf16>
// CHECK: linalg.transpose ins(%{{.*}} : memref<128x256xbf16>) outs(%[[T]] : memref<256x128xbf16>)
// CHECK: linalg.generic {{.*}} ins(%[[T]] : memref<256x128xbf16>) outs(%{{.*}} : memref<256x128xf32>)
// CHECK: memref.copy %[[T]]
// CHECK-LABEL: func.func @after_transposed_weights
func.func @bf16_transposed_weight(%x: memref<64x256xbf16>, %w: memref<128x256xbf16>, %y: memref<64x128xf32>) {
  %t = memref.alloc() : memref<256x128xbf16>
  linalg.transpose ins(%w : memref<128x256xbf16>) outs(%t : memref<256x128xbf16>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<64x256xbf16>, memref<256x128xbf16>) outs(%y : memref<64x128xf32>)
  return
}
func.func @bf16_transpose_read_elsewhere(%x: memref<64x256xbf16>, %w: memref<128x256xbf16>, %y: memref<64x128xf32>, %keep: memref<256x128xbf16>) {
  %t = memref.alloc() : memref<256x128xbf16>
  linalg.transpose ins(%w : memref<128x256xbf16>) outs(%t : memref<256x128xbf16>) permutation = [1, 0]
  linalg.matmul ins(%x, %t : memref<64x256xbf16>, memref<256x128xbf16>) outs(%y : memref<64x128xf32>)
  memref.copy %t, %keep : memref<256x128xbf16> to memref<256x128xbf16>
  return
}
func.func @after_transposed_weights() {
  return
}

// A bf16 buffer that one loop writes whole by rounding f32 values, and
// that only products read (also through a reshape): the loop stores the
// rounded values widened back to f32 (extf(truncf(x))) into an f32 buffer
// the products read; no bf16 buffer and no widening copy are left.
// CHECK-LABEL: func.func @rounded_for_products
// CHECK-NOT: memref.alloc() : memref<{{.*}}xbf16>
// CHECK: %[[WIDE:.*]] = memref.alloc() : memref<64x256xf32>
// CHECK: linalg.generic {{.*}} ins(%arg0 : memref<64x256xf32>) outs(%[[WIDE]] : memref<64x256xf32>)
// CHECK: %[[R:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[W:.*]] = arith.extf %[[R]] : bf16 to f32
// CHECK: linalg.yield %[[W]] : f32
// CHECK-NOT: memref.alloc() : memref<{{.*}}xbf16>
// CHECK-NOT: ins(%{{.*}} : memref<64x256xbf16>)
// CHECK-NOT: ins(%{{.*}} : memref<256x128xbf16>)
// CHECK: vector.fma
// CHECK: return
func.func @rounded_for_products(%x: memref<64x256xf32>, %w: memref<256x128xf32>, %c: memref<64x128xf32>, %w2: memref<2x256x16xbf16>, %d: memref<2x32x16xf32>) {
  %xb = memref.alloc() : memref<64x256xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x256xf32>) outs(%xb : memref<64x256xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  %wb = memref.alloc() : memref<256x128xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%w : memref<256x128xf32>) outs(%wb : memref<256x128xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.matmul ins(%xb, %wb : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  %x3 = memref.expand_shape %xb [[0, 1], [2]] output_shape [2, 32, 256] : memref<64x256xbf16> into memref<2x32x256xbf16>
  linalg.batch_matmul ins(%x3, %w2 : memref<2x32x256xbf16>, memref<2x256x16xbf16>) outs(%d : memref<2x32x16xf32>)
  return
}

// The same with another reader of the bf16 buffer (a loop): it stays, and
// the product widens it.
// CHECK-LABEL: func.func @rounded_and_read
// CHECK: memref.alloc() : memref<64x256xbf16>
// CHECK: arith.truncf
// CHECK-NOT: arith.extf %{{.*}} : bf16 to f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<64x256xbf16>) outs(%{{.*}} : memref<64x256xbf16>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<64x256xbf16>) outs(%{{.*}} : memref<64x256xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: return
func.func @rounded_and_read(%x: memref<64x256xf32>, %w: memref<256x128xbf16>, %c: memref<64x128xf32>, %saved: memref<64x256xbf16>) {
  %xb = memref.alloc() : memref<64x256xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x256xf32>) outs(%xb : memref<64x256xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%xb : memref<64x256xbf16>) outs(%saved : memref<64x256xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  linalg.matmul ins(%xb, %w : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  return
}

// -----

// With fill-tiles (fusion on), the fill that zeroes a product's output
// right before it is done per output tile, inside the tile's forall and
// before its K loop; no fill of the whole output is left.
// TILEFILL-LABEL: func.func @zeroed_output
// TILEFILL-NOT: linalg.fill
// TILEFILL: scf.forall
// TILEFILL: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<{{.*}}strided
// TILEFILL: scf.for
// TILEFILL: vector.fma
func.func @zeroed_output(%a: memref<128x64xf32>, %b: memref<64x96xf32>, %c: memref<128x96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<128x96xf32>)
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x96xf32>) outs(%c : memref<128x96xf32>)
  return
}

// -----

// A bf16 product widened to f32 (no AMX, no bf16-dot) takes its fill into
// its output tiles like an f32 one: no fill of the whole output is left.
// TILEFILL-LABEL: func.func @zeroed_widened_output
// TILEFILL-NOT: linalg.fill ins(%{{.*}} : f32) outs(%arg2
// TILEFILL: arith.extf %{{.*}} : bf16 to f32
// TILEFILL: scf.forall
// TILEFILL: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<{{.*}}strided
// TILEFILL: scf.for
// TILEFILL: vector.fma
func.func @zeroed_widened_output(%a: memref<128x64xbf16>, %b: memref<64x96xbf16>, %c: memref<128x96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<128x96xf32>)
  linalg.matmul ins(%a, %b : memref<128x64xbf16>, memref<64x96xbf16>) outs(%c : memref<128x96xf32>)
  return
}

// -----

// A fill read by something else before the product stays where it is.
// TILEFILL-LABEL: func.func @read_between
// TILEFILL: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<128x96xf32>)
// TILEFILL: memref.copy
// TILEFILL: scf.forall
func.func @read_between(%a: memref<128x64xf32>, %b: memref<64x96xf32>, %c: memref<128x96xf32>, %d: memref<128x96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<128x96xf32>)
  memref.copy %c, %d : memref<128x96xf32> to memref<128x96xf32>
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x96xf32>) outs(%c : memref<128x96xf32>)
  return
}


// -----

// An elementwise loop right after a product that reads its output (a
// residual add on the batch's [B, S, D] view of the [B·S, D] product) runs
// on each output tile right after the tile's K loop, on [M, N] views of its
// buffers; the whole-buffer loop is gone.
// TILEFILL-LABEL: func.func @epilogue
// TILEFILL: memref.collapse_shape %arg3
// TILEFILL: scf.forall
// TILEFILL: linalg.fill
// TILEFILL: scf.for
// TILEFILL: vector.fma
// TILEFILL: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<?x96xf32, strided<[96, 1], offset: ?>>, memref<?x96xf32, strided<[96, 1], offset: ?>>) outs(%{{.*}} : memref<?x96xf32, strided<[96, 1], offset: ?>>)
// TILEFILL: arith.addf
// TILEFILL: }
// TILEFILL-NOT: linalg.generic
// TILEFILL: return
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

// -----

// The same on a product of bf16 operands that the target widens to f32 (no
// AMX, no bf16-dot): it is tiled like an f32 product, so its epilogue runs
// on its tiles too. A vdpbf16ps product (bf16-dot) runs it on each output
// tile after the tile's K loop, the tile in cache.
// TILEFILL-LABEL: func.func @widened_epilogue
// TILEFILL: arith.extf %{{.*}} : bf16 to f32
// TILEFILL: scf.forall
// TILEFILL: vector.fma
// TILEFILL: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<?x96xf32, strided<[96, 1], offset: ?>>, memref<?x96xf32, strided<[96, 1], offset: ?>>) outs(%{{.*}} : memref<?x96xf32, strided<[96, 1], offset: ?>>)
// TILEFILL: arith.addf
// TILEFILL: }
// TILEFILL-NOT: linalg.generic
// TILEFILL: return
// DOTEPI-LABEL: func.func @widened_epilogue
// DOTEPI: scf.forall
// DOTEPI: x86vector.avx512.dot
// DOTEPI: %[[TILE:.*]] = memref.subview %{{.*}}[%{{.*}}, 0] [%{{.*}}, 96] [1, 1] : memref<128x96xf32> to memref<?x96xf32, strided<[96, 1], offset: ?>>
// DOTEPI: linalg.generic {{.*}} ins(%{{.*}}, %[[TILE]] : memref<?x96xf32, strided<[96, 1], offset: ?>>, memref<?x96xf32, strided<[96, 1], offset: ?>>) outs(%{{.*}} : memref<?x96xf32, strided<[96, 1], offset: ?>>)
// DOTEPI: arith.addf
// DOTEPI: }
// DOTEPI-NEXT: }
// DOTEPI-NOT: linalg.generic
// DOTEPI: return
#id3x = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @widened_epilogue(%a: memref<128x64xbf16>, %b: memref<64x96xbf16>, %x: memref<2x64x96xf32>, %y: memref<2x64x96xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x96xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x96xf32>)
  linalg.matmul ins(%a, %b : memref<128x64xbf16>, memref<64x96xbf16>) outs(%c : memref<128x96xf32>)
  %c3 = memref.expand_shape %c [[0, 1], [2]] output_shape [2, 64, 96] : memref<128x96xf32> into memref<2x64x96xf32>
  linalg.generic {indexing_maps = [#id3x, #id3x, #id3x], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %c3 : memref<2x64x96xf32>, memref<2x64x96xf32>) outs(%y : memref<2x64x96xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  }
  memref.dealloc %c : memref<128x96xf32>
  return
}

// -----

// An epilogue on the heads' view of the output ([B, S, H, hd] for N = H·hd,
// a bf16 copy of V kept for the backward pass) runs on the tiles of
// [M, N] views of its buffers too.
// TILEFILL-LABEL: func.func @heads_view_epilogue
// TILEFILL: %[[COPY:.*]] = memref.alloc() : memref<2x64x4x24xbf16>
// TILEFILL: %[[ROWS:.*]] = memref.collapse_shape %[[COPY]] {{\[}}[0, 1], [2, 3]] : memref<2x64x4x24xbf16> into memref<128x96xbf16>
// TILEFILL: scf.forall
// TILEFILL: vector.fma
// TILEFILL: linalg.generic {{.*}} ins(%{{.*}} : memref<?x96xf32, strided<[96, 1], offset: ?>>) outs(%{{.*}} : memref<?x96xbf16, strided<[96, 1], offset: ?>>)
// TILEFILL: arith.truncf
// TILEFILL: }
// TILEFILL-NOT: linalg.generic
// TILEFILL: return
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @heads_view_epilogue(%a: memref<128x64xf32>, %b: memref<64x96xf32>) -> memref<2x64x4x24xbf16> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x96xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x96xf32>)
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x96xf32>) outs(%c : memref<128x96xf32>)
  %c4 = memref.expand_shape %c [[0, 1], [2, 3]] output_shape [2, 64, 4, 24] : memref<128x96xf32> into memref<2x64x4x24xf32>
  %copy = memref.alloc() : memref<2x64x4x24xbf16>
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c4 : memref<2x64x4x24xf32>) outs(%copy : memref<2x64x4x24xbf16>) {
  ^bb0(%v: f32, %o: bf16):
    %n = arith.truncf %v : f32 to bf16
    linalg.yield %n : bf16
  }
  memref.dealloc %c : memref<128x96xf32>
  return %copy : memref<2x64x4x24xbf16>
}

// -----

// Attention's scores: a batch matmul scaled and causally masked in place.
// The loop runs over the product's output itself, so it runs on each
// output tile right after the tile's K loop, its indices shifted by the
// tile's offsets; the whole-buffer loop is gone.
// TILEFILL-LABEL: func.func @batch_in_place_mask
// TILEFILL: scf.forall (%[[B:.*]]) in (6)
// TILEFILL: %[[TILE:.*]] = memref.subview %{{.*}}[%[[B]], 0, 0] [1, 37, 37]
// TILEFILL: vector.fma
// TILEFILL: linalg.generic {{.*}} outs(%[[TILE]] : memref<1x37x37xf32
// TILEFILL: linalg.index 1
// TILEFILL: linalg.index 2
// TILEFILL: arith.cmpi
// TILEFILL-NOT: linalg.generic
// TILEFILL: return
// With tiles of rows and columns, the indices are shifted by the tile's.
// SHIFT-LABEL: func.func @batch_in_place_mask
// SHIFT: scf.forall (%[[B:.*]], %{{.*}}, %{{.*}}) in (6, 3, 2)
// SHIFT: %[[TILE:.*]] = memref.subview %{{.*}}[%[[B]], %[[I:[0-9a-z_]+]], %[[J:[0-9a-z_]+]]] [1,
// SHIFT: linalg.generic {{.*}} outs(%[[TILE]] : memref<1x?x?xf32
// SHIFT: %[[ROW:.*]] = linalg.index 1
// SHIFT: %[[R:.*]] = arith.addi %[[ROW]], %[[I]]
// SHIFT: %[[COL:.*]] = linalg.index 2
// SHIFT: %[[C:.*]] = arith.addi %[[COL]], %[[J]]
// SHIFT: arith.cmpi ugt, %[[C]], %[[R]]
// SHIFT-NOT: linalg.generic
// SHIFT: return
#id3m = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @batch_in_place_mask(%q: memref<6x37x16xf32>, %kt: memref<6x16x37xf32>, %out: memref<6x37x37xf32>) {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.25 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s = memref.alloc() : memref<6x37x37xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<6x37x37xf32>)
  linalg.batch_matmul ins(%q, %kt : memref<6x37x16xf32>, memref<6x16x37xf32>) outs(%s : memref<6x37x37xf32>)
  linalg.generic {indexing_maps = [#id3m], iterator_types = ["parallel", "parallel", "parallel"]} outs(%s : memref<6x37x37xf32>) {
  ^bb0(%v: f32):
    %x = arith.mulf %v, %scale : f32
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %above = arith.cmpi ugt, %j, %i : index
    %m = arith.select %above, %ninf, %x : f32
    linalg.yield %m : f32
  }
  memref.copy %s, %out : memref<6x37x37xf32> to memref<6x37x37xf32>
  return
}

// -----

// Attention's dS = P·(dP − D): the loop reads the dP product's output and a
// per-row statistic broadcast along the row; on each tile it reads the
// statistic's tile through its map.
// SHIFT-LABEL: func.func @batch_broadcast_epilogue
// SHIFT: scf.forall (%[[B:.*]], %{{.*}}, %{{.*}}) in (6, 3, 2)
// SHIFT: memref.subview %{{.*}}[%[[B]], %[[I:[0-9a-z_]+]], %{{[0-9a-z_]+}}] [1,
// SHIFT: %[[ROWS:.*]] = memref.subview %arg3[%[[B]], %[[I]]]
// SHIFT: linalg.generic {{.*}} ins(%{{.*}}, %[[ROWS]], %{{.*}} : memref<1x?x?xf32, {{.*}}>, memref<1x?xf32, {{.*}}>, memref<1x?x?xf32, {{.*}}>)
// SHIFT: arith.subf
// SHIFT-NOT: linalg.generic
// SHIFT: return
#id3b = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rowb = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @batch_broadcast_epilogue(%do: memref<6x37x16xf32>, %vt: memref<6x16x37xf32>, %p: memref<6x37x37xf32>, %d: memref<6x37xf32>, %ds: memref<6x37x37xf32>) {
  %zero = arith.constant 0.0 : f32
  %dp = memref.alloc() : memref<6x37x37xf32>
  linalg.fill ins(%zero : f32) outs(%dp : memref<6x37x37xf32>)
  linalg.batch_matmul ins(%do, %vt : memref<6x37x16xf32>, memref<6x16x37xf32>) outs(%dp : memref<6x37x37xf32>)
  linalg.generic {indexing_maps = [#id3b, #rowb, #id3b, #id3b], iterator_types = ["parallel", "parallel", "parallel"]} ins(%dp, %d, %p : memref<6x37x37xf32>, memref<6x37xf32>, memref<6x37x37xf32>) outs(%ds : memref<6x37x37xf32>) {
  ^bb0(%g: f32, %r: f32, %pp: f32, %o: f32):
    %x = arith.subf %g, %r : f32
    %y = arith.mulf %pp, %x : f32
    linalg.yield %y : f32
  }
  memref.dealloc %dp : memref<6x37x37xf32>
  return
}

// -----

// A loop over the output that writes another buffer through a broadcast
// map (every tile of a row would write the same element): not an
// epilogue, the whole-buffer loop stays after the product.
// TILEFILL-LABEL: func.func @broadcast_output_not_epilogue
// TILEFILL: scf.forall
// TILEFILL: vector.fma
// TILEFILL: linalg.generic {{.*}} ins(%{{.*}} : memref<6x37x37xf32>) outs(%{{.*}} : memref<6x37xf32>)
#id3w = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#roww = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @broadcast_output_not_epilogue(%q: memref<6x37x16xf32>, %kt: memref<6x16x37xf32>, %last: memref<6x37xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<6x37x37xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<6x37x37xf32>)
  linalg.batch_matmul ins(%q, %kt : memref<6x37x16xf32>, memref<6x16x37xf32>) outs(%s : memref<6x37x37xf32>)
  linalg.generic {indexing_maps = [#id3w, #roww], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : memref<6x37x37xf32>) outs(%last : memref<6x37xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  }
  memref.dealloc %s : memref<6x37x37xf32>
  return
}

// -----

// Attention's dK, computed per (batch, head) as [B·H, S, D] and moved to
// the sequence's layout [B, S, H, D]: each output tile is filled and
// written straight into the new layout (head bh mod H of sequence bh / H),
// and neither the transpose nor the [B·H, S, D] buffer is left.
// TILEFILL-LABEL: func.func @output_transposed
// TILEFILL-NOT: linalg.transpose
// TILEFILL: %[[NEW:.*]] = memref.alloc() : memref<2x37x4x16xf32>
// TILEFILL: %[[ROWS:.*]] = memref.collapse_shape %[[NEW]] {{\[}}[0], [1], [2, 3]] : memref<2x37x4x16xf32> into memref<2x37x64xf32>
// TILEFILL: scf.forall (%[[BH:.*]]) in (8)
// TILEFILL-DAG: %[[SEQ:.*]] = affine.apply #{{.*}}(%[[BH]])
// TILEFILL-DAG: %[[COL:.*]] = affine.apply #{{.*}}(%[[BH]])
// TILEFILL: %[[TILE:.*]] = memref.subview %[[ROWS]][%[[SEQ]], 0, %[[COL]]] [1, 37, 16] [1, 1, 1] : memref<2x37x64xf32> to memref<37x16xf32, strided<[64, 1], offset: ?>>
// TILEFILL: linalg.fill ins(%{{.*}} : f32) outs(%[[TILE]]
// TILEFILL: vector.fma
// TILEFILL-NOT: linalg.transpose
// TILEFILL: memref.copy %[[NEW]], %arg2
// SHIFT-LABEL: func.func @output_transposed
// SHIFT-NOT: linalg.transpose
// SHIFT: memref.subview %{{.*}} [1, %{{.*}}, 16] [1, 1, 1] : memref<2x37x64xf32> to memref<?x16xf32, strided<[64, 1], offset: ?>>
// SHIFT-NOT: linalg.transpose
// SHIFT: return
func.func @output_transposed(%ds: memref<8x37x37xf32>, %q: memref<8x37x16xf32>, %out: memref<2x37x4x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %dk = memref.alloc() : memref<8x37x16xf32>
  linalg.fill ins(%zero : f32) outs(%dk : memref<8x37x16xf32>)
  linalg.batch_matmul ins(%ds, %q : memref<8x37x37xf32>, memref<8x37x16xf32>) outs(%dk : memref<8x37x16xf32>)
  %heads = memref.expand_shape %dk [[0, 1], [2], [3]] output_shape [2, 4, 37, 16] : memref<8x37x16xf32> into memref<2x4x37x16xf32>
  %seq = memref.alloc() : memref<2x37x4x16xf32>
  linalg.transpose ins(%heads : memref<2x4x37x16xf32>) outs(%seq : memref<2x37x4x16xf32>) permutation = [0, 2, 1, 3]
  memref.copy %seq, %out : memref<2x37x4x16xf32> to memref<2x37x4x16xf32>
  memref.dealloc %dk : memref<8x37x16xf32>
  return
}

// -----

// SwiGLU's gradient loop after the down projection's dX product: it reads
// the product (dh) with gate and up and writes three results; it runs on
// each output tile, on [M, N] views of all six buffers.
// TILEFILL-LABEL: func.func @epilogue_results
// TILEFILL: scf.forall
// TILEFILL: vector.fma
// TILEFILL: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<?x96xf32, {{.*}}>, memref<?x96xf32, {{.*}}>, memref<?x96xf32, {{.*}}>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<?x96xf32, {{.*}}>, memref<?x96xf32, {{.*}}>, memref<?x96xf32, {{.*}}>)
// TILEFILL-NOT: linalg.generic
// TILEFILL: return
#id3r = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @epilogue_results(%dy: memref<128x64xf32>, %w: memref<64x96xf32>, %g: memref<2x64x96xf32>, %u: memref<2x64x96xf32>, %h: memref<2x64x96xf32>, %dg: memref<2x64x96xf32>, %du: memref<2x64x96xf32>) {
  %zero = arith.constant 0.0 : f32
  %dh = memref.alloc() : memref<128x96xf32>
  linalg.fill ins(%zero : f32) outs(%dh : memref<128x96xf32>)
  linalg.matmul ins(%dy, %w : memref<128x64xf32>, memref<64x96xf32>) outs(%dh : memref<128x96xf32>)
  %dh3 = memref.expand_shape %dh [[0, 1], [2]] output_shape [2, 64, 96] : memref<128x96xf32> into memref<2x64x96xf32>
  linalg.generic {indexing_maps = [#id3r, #id3r, #id3r, #id3r, #id3r, #id3r], iterator_types = ["parallel", "parallel", "parallel"]} ins(%dh3, %g, %u : memref<2x64x96xf32>, memref<2x64x96xf32>, memref<2x64x96xf32>) outs(%h, %dg, %du : memref<2x64x96xf32>, memref<2x64x96xf32>, memref<2x64x96xf32>) {
  ^bb0(%d: f32, %a: f32, %b: f32, %o0: f32, %o1: f32, %o2: f32):
    %s = math.exp %a : f32
    %hv = arith.mulf %s, %b : f32
    %dgv = arith.mulf %d, %b : f32
    %duv = arith.mulf %d, %s : f32
    linalg.yield %hv, %dgv, %duv : f32, f32, f32
  }
  memref.dealloc %dh : memref<128x96xf32>
  return
}

// -----

// Attention's dO moved to heads only for products (dP = dO·Vᵀ): each tile
// reads its rows of head bh mod H of sequence bh / H straight from the
// sequence's layout; the transpose is gone.
// TILEFILL-LABEL: func.func @heads_operand
// TILEFILL-NOT: linalg.transpose
// TILEFILL: %[[ROWS:.*]] = memref.collapse_shape %arg0 {{\[}}[0], [1], [2, 3]] : memref<2x37x4x16xf32> into memref<2x37x64xf32>
// TILEFILL: scf.forall (%[[BH:.*]]) in (8)
// TILEFILL: vector.transfer_read %[[ROWS]][
// TILEFILL: vector.fma
// TILEFILL-NOT: linalg.transpose
// TILEFILL: return
func.func @heads_operand(%x: memref<2x37x4x16xf32>, %vt: memref<8x16x37xf32>, %out: memref<8x37x37xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<2x4x37x16xf32>
  linalg.transpose ins(%x : memref<2x37x4x16xf32>) outs(%t : memref<2x4x37x16xf32>) permutation = [0, 2, 1, 3]
  %c = memref.collapse_shape %t [[0, 1], [2], [3]] : memref<2x4x37x16xf32> into memref<8x37x16xf32>
  %dp = memref.alloc() : memref<8x37x37xf32>
  linalg.fill ins(%zero : f32) outs(%dp : memref<8x37x37xf32>)
  linalg.batch_matmul ins(%c, %vt : memref<8x37x16xf32>, memref<8x16x37xf32>) outs(%dp : memref<8x37x37xf32>)
  memref.copy %dp, %out : memref<8x37x37xf32> to memref<8x37x37xf32>
  memref.dealloc %t : memref<2x4x37x16xf32>
  return
}

// -----

// The same, but the source is written between the transpose and the
// product: the transposed copy stays.
// TILEFILL-LABEL: func.func @heads_operand_overwritten
// TILEFILL: linalg.transpose
// TILEFILL: scf.forall
func.func @heads_operand_overwritten(%x: memref<2x37x4x16xf32>, %vt: memref<8x16x37xf32>, %out: memref<8x37x37xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<2x4x37x16xf32>
  linalg.transpose ins(%x : memref<2x37x4x16xf32>) outs(%t : memref<2x4x37x16xf32>) permutation = [0, 2, 1, 3]
  linalg.fill ins(%zero : f32) outs(%x : memref<2x37x4x16xf32>)
  %c = memref.collapse_shape %t [[0, 1], [2], [3]] : memref<2x4x37x16xf32> into memref<8x37x16xf32>
  %dp = memref.alloc() : memref<8x37x37xf32>
  linalg.fill ins(%zero : f32) outs(%dp : memref<8x37x37xf32>)
  linalg.batch_matmul ins(%c, %vt : memref<8x37x16xf32>, memref<8x16x37xf32>) outs(%dp : memref<8x37x37xf32>)
  memref.copy %dp, %out : memref<8x37x37xf32> to memref<8x37x37xf32>
  memref.dealloc %t : memref<2x4x37x16xf32>
  return
}

// -----

// The product's output read again after the loop: the epilogue still runs
// on each tile (the tile is whole by then), and the output stays whole for
// the later reader.
// TILEFILL-LABEL: func.func @read_later
// TILEFILL: scf.forall
// TILEFILL: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : memref<?x96xf32, strided<[96, 1], offset: ?>>, memref<?x96xf32, strided<[96, 1], offset: ?>>)
// TILEFILL-NOT: linalg.generic
// TILEFILL: memref.copy %{{.*}}, %{{.*}} : memref<128x96xf32> to memref<128x96xf32>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @read_later(%a: memref<128x64xf32>, %b: memref<64x96xf32>, %x: memref<128x96xf32>, %y: memref<128x96xf32>, %z: memref<128x96xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x96xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x96xf32>)
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x96xf32>) outs(%c : memref<128x96xf32>)
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %c : memref<128x96xf32>, memref<128x96xf32>) outs(%y : memref<128x96xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  }
  memref.copy %c, %z : memref<128x96xf32> to memref<128x96xf32>
  return
}

// -----

// The fill inside the output tiles writes a view of the output, which
// upstream's hoisting refuses: the register tile's accumulators are still
// read once before the K loop, carried by it, and written once after it.
// TILEFILL-LABEL: func.func @tile_accumulators
// TILEFILL: scf.forall
// TILEFILL: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<?x96xf32, strided<[96, 1], offset: ?>>)
// TILEFILL: %[[ACC:.*]] = vector.transfer_read %[[C:[a-z_0-9]+]][%{{.*}}, %c0], {{.*}} vector<6x64xf32>
// TILEFILL: %[[SUM:.*]] = scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}} = %[[ACC]]) -> (vector<6x64xf32>)
// TILEFILL-NOT: vector.transfer_write
// TILEFILL: scf.yield
// TILEFILL: vector.transfer_write %[[SUM]], %[[C]]
func.func @tile_accumulators(%a: memref<128x64xf32>, %b: memref<64x96xf32>, %out: memref<128x96xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x96xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x96xf32>)
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x96xf32>) outs(%c : memref<128x96xf32>)
  memref.copy %c, %out : memref<128x96xf32> to memref<128x96xf32>
  return
}

// A reader that is not among the ops right after the writer (here in a
// loop's body): an f32 buffer kept that long would cost twice the narrow
// one, so the bf16 buffer stays and the product widens it.
// CHECK-LABEL: func.func @rounded_read_later
// CHECK: memref.alloc() : memref<64x256xbf16>
// CHECK: scf.for
// CHECK: ins(%{{.*}} : memref<64x256xbf16>) outs(%{{.*}} : memref<64x256xf32>)
// CHECK: return
func.func @rounded_read_later(%x: memref<64x256xf32>, %w: memref<256x128xbf16>, %c: memref<64x128xf32>) {
  %xb = memref.alloc() : memref<64x256xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x256xf32>) outs(%xb : memref<64x256xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    linalg.matmul ins(%xb, %w : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  }
  return
}

// The rounded copy's f32 source written by one loop and read by nothing
// else: that loop rounds what it stores, and the product reads it; no
// rounding loop, no copy.
// CHECK-LABEL: func.func @rounded_in_producer
// CHECK: %[[X:.*]] = memref.alloc() : memref<64x256xf32>
// CHECK: linalg.generic {{.*}} outs(%[[X]] : memref<64x256xf32>)
// CHECK: %[[V:.*]] = arith.mulf
// CHECK: %[[R:.*]] = arith.truncf %[[V]] : f32 to bf16
// CHECK: %[[W:.*]] = arith.extf %[[R]] : bf16 to f32
// CHECK: linalg.yield %[[W]] : f32
// CHECK-NOT: ins(%[[X]]
// CHECK-NOT: xbf16>
// CHECK: vector.transfer_read %[[X]]
// CHECK: return
func.func @rounded_in_producer(%a: memref<64x256xf32>, %w: memref<256x128xf32>, %c: memref<64x128xf32>) {
  %x = memref.alloc() : memref<64x256xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<64x256xf32>) outs(%x : memref<64x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  }
  %xb = memref.alloc() : memref<64x256xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x256xf32>) outs(%xb : memref<64x256xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  %wb = memref.alloc() : memref<256x128xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%w : memref<256x128xf32>) outs(%wb : memref<256x128xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.matmul ins(%xb, %wb : memref<64x256xbf16>, memref<256x128xbf16>) outs(%c : memref<64x128xf32>)
  return
}

// The source written by a copy in parallel tasks (attention's tasks copy
// each head's dV into its columns of [B, S, H, D]), read only by the cast
// through a reshape: each task's copy rounds what it stores, and the
// product reads the buffer; no rounding loop.
// CHECK-LABEL: func.func @rounded_in_task_copy
// CHECK: %[[X:.*]] = memref.alloc() : memref<2x16x4x8xf32>
// CHECK: scf.forall
// CHECK: %[[XS:.*]] = memref.subview %[[X]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<16x8xf32>) outs(%[[XS]] :
// CHECK: %[[R:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[W:.*]] = arith.extf %[[R]] : bf16 to f32
// CHECK: linalg.yield %[[W]] : f32
// CHECK-NOT: linalg.copy
// CHECK-NOT: xbf16>
// CHECK: vector.transfer_read
// CHECK: return
func.func @rounded_in_task_copy(%v: memref<2x4x16x8xf32>, %w: memref<32x16xf32>, %c: memref<32x16xf32>) {
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
  %wb = memref.alloc() : memref<32x16xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%w : memref<32x16xf32>) outs(%wb : memref<32x16xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.matmul ins(%xb, %wb : memref<32x32xbf16>, memref<32x16xbf16>) outs(%c : memref<32x16xf32>)
  return
}

// The source is read by another loop as well (and the products read the
// rounded copy through a reshape): the writer, a row loop here, stores
// both, the f32 value into X for the other reader and the rounded one into
// a buffer of X's shape for the products.
// CHECK-LABEL: func.func @rounded_beside_other_reader
// CHECK: %[[X:.*]] = memref.alloc() : memref<64x256xf32>
// CHECK: %[[Y:.*]] = memref.alloc() : memref<64x256xf32>
// CHECK: scf.for
// CHECK: %[[XS:.*]] = memref.subview %[[X]]
// CHECK: %[[YS:.*]] = memref.subview %[[Y]]
// CHECK: linalg.generic {{.*}} outs(%[[XS]], %[[YS]] : {{.*}})
// CHECK: %[[V:.*]] = arith.mulf
// CHECK: %[[R:.*]] = arith.truncf %[[V]] : f32 to bf16
// CHECK: %[[W:.*]] = arith.extf %[[R]] : bf16 to f32
// CHECK: linalg.yield %[[V]], %[[W]] : f32, f32
// CHECK: linalg.generic {{.*}} ins(%[[X]] : memref<64x256xf32>) outs(%arg3 : memref<64xf32>)
// CHECK-NOT: arith.truncf
// CHECK: vector.transfer_read %[[Y]]
// CHECK: return
func.func @rounded_beside_other_reader(%a: memref<64x256xf32>, %w2: memref<2x256x16xbf16>, %d: memref<2x32x16xf32>, %sum: memref<64xf32>) {
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
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x256xf32>) outs(%sum : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  %x3 = memref.expand_shape %x [[0, 1], [2]] output_shape [2, 32, 256] : memref<64x256xf32> into memref<2x32x256xf32>
  %xb = memref.alloc() : memref<2x32x256xbf16>
  linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x3 : memref<2x32x256xf32>) outs(%xb : memref<2x32x256xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.batch_matmul ins(%xb, %w2 : memref<2x32x256xbf16>, memref<2x256x16xbf16>) outs(%d : memref<2x32x16xf32>)
  return
}

// A writer that accumulates into the source (it reads what it writes) is
// left alone: the rounding loop stays.
// CHECK-LABEL: func.func @rounded_after_accumulation
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: linalg.yield
// CHECK: arith.truncf
// CHECK-NEXT: arith.extf
// CHECK-NEXT: linalg.yield
// CHECK: return
func.func @rounded_after_accumulation(%a: memref<64x256xf32>, %w: memref<256x128xbf16>, %c: memref<64x128xf32>) {
  %x = memref.alloc() : memref<64x256xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<64x256xf32>) outs(%x : memref<64x256xf32>) {
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

// -----

// A product's epilogue whose result is cast for a bf16 product and read by
// another loop: the epilogue stores the cast values as a second output,
// on each output tile.
// TILEFILL-LABEL: func.func @epilogue_casts
// TILEFILL: scf.forall
// TILEFILL: vector.fma
// TILEFILL: linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : memref<?x96xf32, strided<[96, 1], offset: ?>>, memref<?x96xf32, strided<[96, 1], offset: ?>>)
// TILEFILL: %[[V:.*]] = arith.addf
// TILEFILL: %[[R:.*]] = arith.truncf %[[V]] : f32 to bf16
// TILEFILL: %[[W:.*]] = arith.extf %[[R]] : bf16 to f32
// TILEFILL: linalg.yield %[[V]], %[[W]] : f32, f32
// TILEFILL-NOT: arith.truncf
// TILEFILL: return
func.func @epilogue_casts(%a: memref<128x64xf32>, %b: memref<64x96xf32>, %x: memref<128x96xf32>, %sum: memref<128xf32>, %w: memref<96x32xbf16>, %d: memref<128x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x96xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x96xf32>)
  linalg.matmul ins(%a, %b : memref<128x64xf32>, memref<64x96xf32>) outs(%c : memref<128x96xf32>)
  %h = memref.alloc() : memref<128x96xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %c : memref<128x96xf32>, memref<128x96xf32>) outs(%h : memref<128x96xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]}
      ins(%h : memref<128x96xf32>) outs(%sum : memref<128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  %hb = memref.alloc() : memref<128x96xbf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h : memref<128x96xf32>) outs(%hb : memref<128x96xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  linalg.matmul ins(%hb, %w : memref<128x96xbf16>, memref<96x32xbf16>) outs(%d : memref<128x32xf32>)
  return
}
