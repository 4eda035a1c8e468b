// tgc-expand-math: f32 <-> bf16 conversions and bf16 selects become integer
// arithmetic, so LLVM needs no __truncsfbf2 (missing from Debian's libgcc)
// on a CPU without AVX512-BF16; exp becomes a polynomial.
// RUN: tgc-opt %s --tgc-expand-math | FileCheck %s

// CHECK-LABEL: func.func @bf16
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
// CHECK: arith.shrui
// CHECK: arith.select {{.*}} : vector<8xi1>, vector<8xi16>
// CHECK-NOT: math.exp
func.func @bf16(%x: vector<8xf32>, %c: vector<8xi1>) -> (vector<8xbf16>, vector<8xf32>, vector<8xf32>) {
  %t = arith.truncf %x : vector<8xf32> to vector<8xbf16>
  %nan = arith.constant dense<0x7FC0> : vector<8xbf16>
  %s = arith.select %c, %nan, %t : vector<8xi1>, vector<8xbf16>
  %w = arith.extf %s : vector<8xbf16> to vector<8xf32>
  %e = math.exp %x : vector<8xf32>
  return %s, %w, %e : vector<8xbf16>, vector<8xf32>, vector<8xf32>
}

// A masked element read (vector-to-scf's scf.if yielding the element or the
// padding) yields the element's i16 bits.
// CHECK-LABEL: func.func @if_bf16
// CHECK: %[[BITS:[0-9]+]]:2 = scf.if %{{.*}} -> (i16, f32)
// CHECK: %[[LOADED:.*]] = memref.load
// CHECK: %[[B:.*]] = arith.bitcast %[[LOADED]] : bf16 to i16
// CHECK: scf.yield %[[B]], %{{.*}} : i16, f32
// CHECK: } else {
// CHECK: scf.yield %{{.*}}, %{{.*}} : i16, f32
// CHECK: arith.bitcast %[[BITS]]#0 : i16 to bf16
func.func @if_bf16(%m: memref<4xbf16>, %i: index, %c: i1, %f: f32) -> (bf16, f32) {
  %pad = arith.constant 0.0 : bf16
  %r:2 = scf.if %c -> (bf16, f32) {
    %v = memref.load %m[%i] : memref<4xbf16>
    scf.yield %v, %f : bf16, f32
  } else {
    scf.yield %pad, %f : bf16, f32
  }
  return %r#0, %r#1 : bf16, f32
}
